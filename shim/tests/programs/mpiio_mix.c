/* Exercises every MPI-IO data-access family the shim handles, on one shared file, and prints per-rank
 * checksums of everything read back plus sizes and positions. Run with and without the shim: stdout
 * and the file (or every replica of it) must be byte-identical.
 *   mpiio_mix PATH [BLOCK_BYTES] [--crash-rank R]
 * --crash-rank: after the first write phase, rank R kills itself with SIGKILL (a rank dying mid-run). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiio_mix PATH [BLOCK_BYTES] [--crash-rank R]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *path = argv[1];
    int B = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : 4096, crash = -1;
    for (int i = 2; i < argc - 1; i++)
        if (strcmp(argv[i], "--crash-rank") == 0)
            crash = atoi(argv[i + 1]);
    const int K = 4; /* blocks per rank per phase */
    unsigned char *buf = malloc((size_t)B * K), *rd = malloc((size_t)B * K);
    MPI_File fh;
    OPEN_OR_EXIT(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    const MPI_Offset region = (MPI_Offset)B * K * np; /* each phase writes one region */
    MPI_Status st;
    MPI_Request rq[8];

    /* phase 0: explicit offsets, independent, interleaved blocks */
    for (int k = 0; k < K; k++) {
        fill(buf, (size_t)B, rank, k);
        OK(MPI_File_write_at(fh, ((MPI_Offset)k * np + rank) * B, buf, B, MPI_BYTE, &st));
    }
    if (crash >= 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == crash)
            kill(getpid(), SIGKILL);
        sleep(30); /* the launcher tears the job down */
    }
    /* phase 1: individual file pointer: seek, write, get_position */
    OK(MPI_File_seek(fh, region + (MPI_Offset)rank * B * K, MPI_SEEK_SET));
    for (int k = 0; k < K; k++) {
        fill(buf, (size_t)B, rank, 10 + k);
        OK(MPI_File_write(fh, buf, B, MPI_BYTE, &st));
    }
    MPI_Offset pos;
    OK(MPI_File_get_position(fh, &pos));
    /* phase 2: collectives, explicit and individual pointer */
    fill(buf, (size_t)B, rank, 20);
    OK(MPI_File_write_at_all(fh, 2 * region + (MPI_Offset)rank * B, buf, B, MPI_BYTE, &st));
    OK(MPI_File_seek(fh, 2 * region + (MPI_Offset)(np + rank) * B, MPI_SEEK_SET));
    fill(buf, (size_t)B, rank, 21);
    OK(MPI_File_write_all(fh, buf, B, MPI_BYTE, &st));
    /* phase 3: nonblocking, independent and collective */
    for (int k = 0; k < 2; k++) {
        fill(buf + (size_t)k * B, (size_t)B, rank, 30 + k);
        OK(MPI_File_iwrite_at(fh, 3 * region + ((MPI_Offset)k * np + rank) * B, buf + (size_t)k * B, B, MPI_BYTE, &rq[k]));
    }
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    fill(buf, (size_t)B, rank, 32);
    OK(MPI_File_iwrite_at_all(fh, 3 * region + (MPI_Offset)(2 * np + rank) * B, buf, B, MPI_BYTE, &rq[0]));
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    OK(MPI_File_seek(fh, 3 * region + (MPI_Offset)(3 * np + rank) * B, MPI_SEEK_SET));
    fill(buf, (size_t)B, rank, 33);
    OK(MPI_File_iwrite(fh, buf, B / 2, MPI_BYTE, &rq[0]));
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    OK(MPI_File_iwrite_all(fh, buf + B / 2, B - B / 2, MPI_BYTE, &rq[0]));
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    /* phase 4: a strided view (ints interleaved across ranks) written collectively: noncontiguous */
    MPI_Datatype vec, tile;
    MPI_Type_vector(1, 1, np, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)sizeof(int) * np, &tile);
    MPI_Type_commit(&tile);
    const int nints = B / (int)sizeof(int);
    int *ints = malloc(sizeof(int) * (size_t)nints);
    for (int i = 0; i < nints; i++)
        ints[i] = rank * 1000003 + i;
    OK(MPI_File_set_view(fh, 4 * region + (MPI_Offset)rank * (MPI_Offset)sizeof(int), MPI_INT, tile, "native", MPI_INFO_NULL));
    OK(MPI_File_write_all(fh, ints, nints, MPI_INT, &st));
    /* and one independent strided write through the view (pointer continues after the collective one) */
    OK(MPI_File_write(fh, ints, nints / 2, MPI_INT, &st));
    MPI_Offset vpos;
    OK(MPI_File_get_position(fh, &vpos));
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    /* a contiguous int view with a displacement: pointer in etypes */
    OK(MPI_File_set_view(fh, 5 * region, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    OK(MPI_File_write_at(fh, (MPI_Offset)rank * nints, ints, nints, MPI_INT, &st));
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));

    /* sync-barrier-sync: every rank's writes visible to every rank */
    OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_File_sync(fh));

    /* read everything back, each rank reading its neighbour's data through every family */
    const int nb = (rank + 1) % np;
    uint64_t h = FNV_INIT;
    for (int k = 0; k < K; k++) {
        OK(MPI_File_read_at(fh, ((MPI_Offset)k * np + nb) * B, rd, B, MPI_BYTE, &st));
        h = fnv1a(h, rd, (size_t)B);
    }
    OK(MPI_File_seek(fh, region + (MPI_Offset)nb * B * K, MPI_SEEK_SET));
    OK(MPI_File_read(fh, rd, B * K, MPI_BYTE, &st));
    h = fnv1a(h, rd, (size_t)B * K);
    OK(MPI_File_read_at_all(fh, 2 * region, rd, B * 2 < B * K ? B * 2 : B * K, MPI_BYTE, &st));
    h = fnv1a(h, rd, (size_t)B * 2);
    OK(MPI_File_seek(fh, 2 * region + (MPI_Offset)(np + nb) * B, MPI_SEEK_SET));
    OK(MPI_File_read_all(fh, rd, B, MPI_BYTE, &st));
    h = fnv1a(h, rd, (size_t)B);
    OK(MPI_File_iread_at(fh, 3 * region + (MPI_Offset)nb * B, rd, B, MPI_BYTE, &rq[0]));
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    h = fnv1a(h, rd, (size_t)B);
    OK(MPI_File_iread_at_all(fh, 3 * region + (MPI_Offset)(2 * np + nb) * B, rd, B, MPI_BYTE, &rq[0]));
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    h = fnv1a(h, rd, (size_t)B);
    OK(MPI_File_seek(fh, 3 * region + (MPI_Offset)(3 * np + nb) * B, MPI_SEEK_SET));
    OK(MPI_File_iread(fh, rd, B, MPI_BYTE, &rq[0]));
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    h = fnv1a(h, rd, (size_t)B);
    OK(MPI_File_iread_all(fh, rd, B, MPI_BYTE, &rq[0])); /* continues past the block: the next rank's */
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    h = fnv1a(h, rd, (size_t)B);
    OK(MPI_File_set_view(fh, 4 * region + (MPI_Offset)nb * (MPI_Offset)sizeof(int), MPI_INT, tile, "native", MPI_INFO_NULL));
    OK(MPI_File_read_all(fh, ints, nints, MPI_INT, &st));
    h = fnv1a(h, ints, sizeof(int) * (size_t)nints);
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    OK(MPI_File_read_at(fh, 5 * region, rd, B, MPI_BYTE, &st));
    h = fnv1a(h, rd, (size_t)B);
    OK(MPI_File_seek(fh, -B, MPI_SEEK_END));
    MPI_Offset endpos;
    OK(MPI_File_get_position(fh, &endpos));
    MPI_Offset size;
    OK(MPI_File_get_size(fh, &size));
    int count = 0;
    OK(MPI_File_read(fh, rd, B, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    h = fnv1a(h, rd, (size_t)count);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_File_close(&fh));

    /* set_size on a reopened file, then the file's final size */
    OK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_size(fh, size + 3));
    MPI_Offset size2;
    OK(MPI_File_get_size(fh, &size2));
    OK(MPI_File_close(&fh));

    char line[256];
    snprintf(line, sizeof line, "rank %d: read %016llx pos %lld vpos %lld end %lld size %lld size2 %lld last %d", rank,
             (unsigned long long)h, (long long)pos, (long long)vpos, (long long)endpos, (long long)size,
             (long long)size2, count);
    print_ordered(line);
    MPI_Type_free(&tile);
    MPI_Type_free(&vec);
    free(ints);
    free(buf);
    free(rd);
    MPI_Finalize();
    return 0;
}
