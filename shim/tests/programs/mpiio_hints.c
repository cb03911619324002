/* Creates PATH with the user hints given as KEY=VALUE arguments and prints, from rank 0, the value the
 * MPI library reports (MPI_File_get_info) for each hint named in the arguments and in PRINT_KEYS.
 *   mpiio_hints PATH [KEY=VALUE ...] */
#include <string.h>

#include "common.h"

static const char *PRINT_KEYS[] = {"striping_unit", "striping_factor", "cb_nodes", "romio_cb_write", "cb_buffer_size"};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Info info = MPI_INFO_NULL;
    if (argc > 2) {
        MPI_Info_create(&info);
        for (int i = 2; i < argc; i++) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", argv[i]);
            char *eq = strchr(kv, '=');
            if (!eq)
                MPI_Abort(MPI_COMM_WORLD, 2);
            *eq = 0;
            MPI_Info_set(info, kv, eq + 1);
        }
    }
    MPI_File fh;
    OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh));
    MPI_Info used;
    OK(MPI_File_get_info(fh, &used));
    if (rank == 0)
        for (size_t k = 0; k < sizeof PRINT_KEYS / sizeof PRINT_KEYS[0]; k++) {
            int nkeys = 0, found = 0;
            MPI_Info_get_nkeys(used, &nkeys);
            for (int i = 0; i < nkeys; i++) {
                char key[MPI_MAX_INFO_KEY + 1];
                MPI_Info_get_nthkey(used, i, key);
                if (strcmp(key, PRINT_KEYS[k]) == 0)
                    found = 1;
            }
            char value[MPI_MAX_INFO_VAL + 1] = "-";
            int flag = 0;
            if (found) {
                int vlen = 0;
                MPI_Info_get_valuelen(used, PRINT_KEYS[k], &vlen, &flag);
                if (flag && vlen < (int)sizeof value)
                    MPI_Info_get(used, PRINT_KEYS[k], vlen + 1, value, &flag);
            }
            printf("%s=%s\n", PRINT_KEYS[k], value);
        }
    MPI_Info_free(&used);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    OK(MPI_File_close(&fh));
    MPI_Finalize();
    return 0;
}
