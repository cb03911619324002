/* pfsshim-check CONFIG: read a shim config with the shim's own parser (config.c) and say whether the shim
 * would accept it. Prints one line and exits 0 (accepted) or 2 (refused, or bad usage), so the operator's
 * tests can check every config pfslayout renders against the real parser, without MPI. */
#include <stdio.h>

#include "pfsshim.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pfsshim-check CONFIG\n");
        return 2;
    }
    pfs_config cfg;
    char err[512];
    if (pfs_config_load(argv[1], &cfg, err, sizeof err) != 0) {
        printf("pfsshim-check: %s\n", err);
        return 2;
    }
    printf("pfsshim-check: %s: ok (%d rules)\n", argv[1], cfg.nrules);
    pfs_config_free(&cfg);
    return 0;
}
