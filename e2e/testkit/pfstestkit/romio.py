"""MPICH with ROMIO's pvfs2 driver against loopback servers: the host build located, and a small MPI-IO
program that writes and reads back a pattern through `pvfs2:` paths."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from pfstestkit.ofs_loopback import OrangeFS

RANKS = 2


# Per rank: an odd size, so blocks end inside a strip (the default strip is 64 KiB).
BLOCK = 1024 * 1024 + 4321


PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The byte at file offset i; the test recomputes it in Python. */
static unsigned char pattern(unsigned long long i) { return (unsigned char)((i * 131u + (i >> 8) * 7u + 17u) & 0xffu); }

static void check(int rc, int rank, const char *what) {
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* romio_check PATH BLOCK [STRIPING_FACTOR]: every rank writes its block, then reads the next rank's. */
int main(int argc, char **argv) {
    int rank, size, flag, count, bad = 0, anybad = 0;
    MPI_File fh;
    MPI_Info info = MPI_INFO_NULL, used;
    MPI_Status st;
    MPI_Offset fsize;
    char fstype[MPI_MAX_INFO_VAL + 1] = "";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *path = argv[1];
    long long block = atoll(argv[2]);
    if (argc > 3) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "striping_factor", argv[3]);
    }
    unsigned char *buf = malloc((size_t)block);
    for (long long j = 0; j < block; j++) buf[j] = pattern((unsigned long long)(rank * block + j));

    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh), rank, "open for writing");
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    check(MPI_File_write_at_all(fh, rank * block, buf, (int)block, MPI_BYTE, &st), rank, "write_at_all");
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count != block) bad = 1;
    MPI_File_get_info(fh, &used);
    MPI_Info_get(used, "romio_filesystem_type", MPI_MAX_INFO_VAL, fstype, &flag);
    MPI_Info_free(&used);
    check(MPI_File_close(&fh), rank, "close after writing");

    int peer = (rank + 1) % size;
    memset(buf, 0, (size_t)block);
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), rank, "open for reading");
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    check(MPI_File_read_at_all(fh, peer * block, buf, (int)block, MPI_BYTE, &st), rank, "read_at_all");
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count != block) bad = 1;
    for (long long j = 0; j < block; j++)
        if (buf[j] != pattern((unsigned long long)(peer * block + j))) { bad = 1; break; }
    check(MPI_File_get_size(fh, &fsize), rank, "get_size");
    if (fsize != (MPI_Offset)size * block) bad = 1;
    check(MPI_File_close(&fh), rank, "close after reading");

    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks=%d size=%lld fstype=%s result=%s\n", size, (long long)fsize, flag ? fstype : "?",
               anybad ? "MISMATCH" : "ok");
    free(buf);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    MPI_Finalize();
    return anybad;
}
"""


def pattern(n: int) -> bytes:
    return bytes(((i * 131 + (i >> 8) * 7 + 17) & 0xFF) for i in range(n))


@dataclass(frozen=True)
class Mpich:
    prefix: Path

    def env(self, ofs: OrangeFS, **extra: str) -> dict[str, str]:
        # No rpath in the trees: the linker (libmpi's libpvfs2) and the loader find both lib dirs here.
        env = ofs.env(**extra)
        env["LD_LIBRARY_PATH"] = f"{self.prefix / 'lib'}:{env['LD_LIBRARY_PATH']}"
        env["PATH"] = f"{self.prefix / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
        return env

    def compile(self, ofs: OrangeFS, source: str, exe: Path) -> Path:
        """An MPI program built with this MPICH's mpicc (warnings on); fails the test on a compile error."""
        src = exe.with_suffix(".c")
        src.write_text(source)
        done = subprocess.run([str(self.prefix / "bin" / "mpicc"), "-O2", "-Wall", "-o", str(exe), str(src)],
                              capture_output=True, text=True, timeout=120, check=False, env=self.env(ofs))
        assert done.returncode == 0, done.stdout + done.stderr
        return exe


@pytest.fixture(scope="session")
def mpich() -> Mpich:
    prefix = os.environ.get("PFSLAYOUT_MPICH_PREFIX")
    if not prefix:
        pytest.skip("PFSLAYOUT_MPICH_PREFIX not set: point it at an MPICH built with ROMIO's pvfs2 driver "
                    "(`images/build/host.sh mpich` builds one and prints its path)")
    for tool_name in ("mpicc", "mpiexec"):
        if not (Path(prefix) / "bin" / tool_name).exists():
            pytest.skip(f"PFSLAYOUT_MPICH_PREFIX={prefix} has no bin/{tool_name}: not an MPICH install")
    return Mpich(Path(prefix))


@pytest.fixture
def romio_check(orangefs: OrangeFS, mpich: Mpich, tmp_path: Path) -> Path:
    return mpich.compile(orangefs, PROGRAM, tmp_path / "romio_check")
