/* pfsprobe: times a calibration grid of I/O cells across MPI ranks and writes pfsprobe/1 JSON
 * (docs/probe-format.md, docs/probe.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "backend.h"
#include "grid.h"
#include "report.h"
#include "runner.h"
#include "topology.h"

enum { EXIT_INPUT = 2, EXIT_IO = 1 };

/* Rank 0 reads the grid file and broadcasts it, so only the launcher's filesystem needs it and every rank
 * parses identical text and reaches the same verdict. */
static char *read_grid_file(const char *path, int rank, char *msg)
{
    long len = -1;
    char *text = NULL;
    if (rank == 0) {
        FILE *fp = fopen(path, "rb");
        if (!fp) {
            snprintf(msg, PROBE_MSG_LEN, "--grid: cannot read %s (%s); give an existing grid file", path,
                     strerror(errno));
        } else {
            if (fseek(fp, 0, SEEK_END) == 0 && (len = ftell(fp)) >= 0 && len < (16L << 20) &&
                fseek(fp, 0, SEEK_SET) == 0 && (text = malloc((size_t)len + 1)) &&
                fread(text, 1, (size_t)len, fp) == (size_t)len) {
                text[len] = '\0';
            } else {
                snprintf(msg, PROBE_MSG_LEN, "--grid: cannot read %s (empty, unreadable or over 16 MiB)", path);
                free(text);
                text = NULL;
                len = -1;
            }
            fclose(fp);
        }
    }
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (len < 0)
        return NULL;
    if (rank != 0 && !(text = malloc((size_t)len + 1)))
        MPI_Abort(MPI_COMM_WORLD, EXIT_IO);
    MPI_Bcast(text, (int)len + 1, MPI_CHAR, 0, MPI_COMM_WORLD);
    return text;
}

static void mpi_library(char *out, size_t n)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    lib[strcspn(lib, "\r\n")] = '\0';
    /* MPICH writes "MPICH Version:\t4.0.2": keep it readable on one line. */
    for (char *c = lib; *c; c++)
        if (*c == '\t')
            *c = ' ';
    snprintf(out, n, "%s", lib);
}

static int finish(int code, int rank, const char *msg)
{
    if (msg && rank == 0) {
        fprintf(stderr, "pfsprobe: %s\n", msg);
        fflush(stderr);
    }
    MPI_Finalize();
    return code;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    static probe_grid grid;
    char msg[PROBE_MSG_LEN] = "";
    grid_defaults(&grid);

    const char *grid_path = grid_file_arg(argc, argv);
    char *text = NULL;
    if (grid_path && !(text = read_grid_file(grid_path, rank, msg)))
        return finish(EXIT_INPUT, rank, msg);
    int rc = grid_parse_args(&grid, argc, argv, text, msg);
    free(text);
    if (rc == 1) {
        if (rank == 0)
            grid_usage(argv[0]);
        return finish(0, rank, NULL);
    }
    if (rc || grid_validate(&grid, size, msg))
        return finish(EXIT_INPUT, rank, msg);

    int bad = rank == 0 ? report_check_writable(grid.out, msg) != 0 : 0;
    if (probe_agree(MPI_COMM_WORLD, bad, msg))
        return finish(EXIT_INPUT, rank, msg);

    const probe_backend *be = &probe_backend_posix;
    if (grid.backend == BACKEND_MPIIO)
        be = &probe_backend_mpiio;
#ifdef PFSPROBE_HAVE_PVFS2
    if (grid.backend == BACKEND_PVFS2)
        be = &probe_backend_pvfs2;
#endif
    if (probe_agree(MPI_COMM_WORLD, be->init(&grid, msg) != 0, msg)) {
        be->finalize();
        return finish(EXIT_INPUT, rank, msg);
    }

    probe_topology topo;
    if (topology_init(&topo, MPI_COMM_WORLD)) {
        fprintf(stderr, "pfsprobe: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, EXIT_IO);
    }

    char started[32], mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    mpi_library(mpi, sizeof mpi);

    probe_run run = {&grid, be, &topo, MPI_COMM_WORLD, NULL, ""};
    if (rank == 0 && !(run.report = report_new(mpi, started, size, topo.nodes, topo.ranks_per_node, grid.servers,
                                               backend_name(grid.backend)))) {
        fprintf(stderr, "pfsprobe: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, EXIT_IO);
    }

    int code = 0;
    int ran = run_grid(&run);
    if (ran) {
        code = ran == -2 ? EXIT_INPUT : EXIT_IO;
        snprintf(msg, sizeof msg, "%s", run.msg);
    } else {
        bad = rank == 0 ? report_write(run.report, grid.out, msg) != 0 : 0;
        if (probe_agree(MPI_COMM_WORLD, bad, msg))
            code = EXIT_IO;
    }
    report_free(run.report);
    grid_free(&grid);
    topology_free(&topo);
    be->finalize();
    return finish(code, rank, code ? msg : NULL);
}
