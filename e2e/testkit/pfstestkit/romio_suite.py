"""ROMIO's own test programs (MPICH's src/mpi/romio/test) and the issue-38 check, built once per MPICH tree
and run through `pvfs2:` paths against loopback servers (operator/tests/orangefs/test_orangefs_romio_suite.py).

The programs come from the MPICH source archive the host build uses (images/build/fetch-source.sh mpich),
with romio-tests.patch (beside this module: a barrier two programs lack, see its header) applied, and
are compiled by the tree's own mpicc. The result is kept under
~/.cache/pfs-layout-operator/romio-tests/<key> (PFSLAYOUT_CACHE moves the root): the key hashes the MPICH
tree's key (the one images/build/host.sh names the tree by; for any other install, its libmpi.so), the
patch, the check program and the program list, so a new MPICH build gets its own suite. A build runs in a
temporary directory renamed into place and stamped <dir>.complete, under a lock, as host.sh does.

PROGRAMS are the ones that apply to OrangeFS, with their process counts; EXCLUDED the others, with the
reason. A program passes when it exits 0 and prints ROMIO's " No Errors"."""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pfstestkit import REPO, cache_root
from pfstestkit.ofs_loopback import OrangeFS
from pfstestkit.romio import Mpich

HERE = Path(__file__).resolve().parent
TEST_PATCH = HERE / "romio-tests.patch"
CHECK_SOURCE = HERE / "romio_noncontig_check.c"
CHECK = "romio_noncontig_check"
# ROMIO's own list of its programs (test/Makefile.am: CTESTS and FTESTS), written beside the build.
PROGRAM_LIST = "romio-programs.txt"


@dataclass(frozen=True)
class Program:
    name: str
    ranks: tuple[int, ...]
    # How the program takes its file: "-fname" (-fname PATH), "plain" (PATH) or "aggregation1" (-h -f PATH).
    style: str = "-fname"

    def argv(self, path: str) -> list[str]:
        if self.style == "plain":
            return [path]
        if self.style == "aggregation1":
            return ["-h", "-f", path]
        return ["-fname", path]


# The process counts: the one a program requires (it refuses any other), else 2 and 4.
PROGRAMS = (
    Program("simple", (2, 4)),
    Program("async", (2, 4)),
    Program("async-multiple", (2, 4)),
    Program("coll_test", (2, 4)),
    Program("excl", (2, 4)),
    Program("creat_excl", (2, 4)),
    Program("file_info", (2, 4)),
    Program("noncontig", (2,)),
    Program("i_noncontig", (2,)),
    Program("noncontig_coll", (2,)),
    Program("noncontig_coll2", (2, 4)),
    Program("split_coll", (2, 4)),
    Program("psimple", (2, 4)),
    Program("error", (1,)),
    Program("status", (1,)),
    Program("types_with_zeros", (2,), "plain"),
    Program("darray_read", (4,), "plain"),  # a 2x2 process grid
    Program("aggregation1", (2, 4), "aggregation1"),
    Program("aggregation2", (2, 4), "plain"),
    Program("hindexed", (4,), "plain"),
)

EXCLUDED = {
    "atomicity": "atomic mode: ad_pvfs2 has none (ADIOI_PVFS2_Fcntl refuses ADIO_FCNTL_SET_ATOMICITY; "
                 "\"Atomic mode not supported on this file system\")",
    "misc": "sets atomic mode and checks it took (\"MPI_File_set_atomicity: Invalid argument\", as atomicity)",
    "shared_fp": "shared file pointers: ad_pvfs2 has none (\"MPI_File_write_shared: Unsupported file operation\")",
    "ordered_fp": "ordered mode uses the shared file pointer, which ad_pvfs2 lacks (as shared_fp)",
    "external32": "never touches OrangeFS (writes ./test.datarep, ignoring -fname) and checks nothing: it prints "
                  "which byte order each data representation has on this platform",
    "syshints": "opens only its own local hint file: ROMIO's hint-file parsing, no file system I/O",
    "perf": "a benchmark (prints bandwidths, checks no data)",
    "coll_perf": "a benchmark (prints bandwidths, checks no data; its 128^3 array takes minutes on 2 cores)",
    "large_file": "checks data, but writes and reads a 4 GiB file: beyond the tier's time budget",
    "large_array": "checks data, but through a 4 GiB darray file: beyond the tier's time budget",
    "big_extents": "not among the programs MPICH 4.0.2's ROMIO builds (test/Makefile.am CTESTS)",
    "fcoll_test, fmisc, fperf, pfcoll_test": "Fortran: the MPICH build has no Fortran (--disable-fortran)",
}

_TREE = re.compile(r"mpich-[^-/]+-([0-9a-f]{16})")


def tree_key(mpich: Mpich) -> str:
    """The host build's key from the tree's name (host.sh: <cache>/mpich-<version>-<key>, published under the
    same name), else the hash of the install's libmpi.so."""
    m = _TREE.fullmatch(Path(mpich.prefix).resolve().name) or _TREE.fullmatch(Path(mpich.prefix).name)
    if m:
        return m.group(1)
    return hashlib.sha256((Path(mpich.prefix) / "lib" / "libmpi.so").read_bytes()).hexdigest()[:16]


def suite_key(mpich: Mpich) -> str:
    h = hashlib.sha256()
    h.update(f"mpich {tree_key(mpich)}\n".encode())
    for path in (TEST_PATCH, CHECK_SOURCE):
        h.update(path.read_bytes())
    h.update(" ".join(p.name for p in PROGRAMS).encode())
    return h.hexdigest()[:16]


def mpich_archive() -> Path:
    """The verified MPICH source archive (host.sh's own source: already fetched when the tree was built here)."""
    result = subprocess.run([str(REPO / "images" / "build" / "fetch-source.sh"), "mpich"], capture_output=True,
                            text=True, timeout=1800, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"fetch-source.sh mpich failed: {result.stderr.strip()}")
    return Path(result.stdout.strip())


def build_suite(mpich: Mpich, ofs: OrangeFS) -> Path:
    """The directory of the compiled programs (PROGRAMS and the check), built once per suite key."""
    root = cache_root() / "romio-tests"
    out = root / f"mpich-{suite_key(mpich)}"
    stamp = out.with_name(out.name + ".complete")
    if stamp.exists() and out.is_dir():
        return out
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and out.is_dir():
            return out
        shutil.rmtree(out, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            _compile(mpich, ofs, tmp)
            tmp.rename(out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        stamp.touch()
    return out


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} (in {cwd}) failed: {result.stdout}{result.stderr}")


def _compile(mpich: Mpich, ofs: OrangeFS, tmp: Path) -> None:
    src = tmp / "src"
    src.mkdir()
    _run(["tar", "-xf", str(mpich_archive()), "-C", str(src), "--strip-components=5", "--wildcards",
          "*/src/mpi/romio/test/*"], tmp)
    _run(["patch", "-p1", "--forward", "--batch", "--silent", "-i", str(TEST_PATCH)], src)
    shutil.copy(CHECK_SOURCE, src / f"{CHECK}.c")
    (tmp / PROGRAM_LIST).write_text("\n".join(makefile_programs((src / "Makefile.am").read_text())) + "\n")
    env = mpich.env(ofs)
    mpicc = str(mpich.prefix / "bin" / "mpicc")
    for name in [p.name for p in PROGRAMS] + [CHECK]:
        _run([mpicc, "-O2", "-o", str(tmp / name), f"{name}.c", "-lm"], src, env)
    shutil.rmtree(src)


def makefile_programs(makefile_am: str) -> list[str]:
    """The names in CTESTS and FTESTS of ROMIO's test/Makefile.am (backslash-continued assignments)."""
    text = makefile_am.replace("\\\n", " ")
    names: list[str] = []
    for var in ("CTESTS", "FTESTS"):
        m = re.search(rf"^{var}\s*=(.*)$", text, re.MULTILINE)
        if m is None:
            raise RuntimeError(f"no {var} in ROMIO's test/Makefile.am")
        names += m.group(1).split()
    return names


def mpiexec(mpich: Mpich, ranks: int, exe: Path, *args: str) -> list[str]:
    return [str(mpich.prefix / "bin" / "mpiexec"), "-launcher", "fork", "-n", str(ranks), str(exe), *args]


def passed(result: subprocess.CompletedProcess[str]) -> bool:
    """ROMIO's verdict: exit 0 and " No Errors" (every program of PROGRAMS prints it only when its checks pass)."""
    return result.returncode == 0 and "No Errors" in result.stdout
