"""The shell the server pods run: create storage only when absent, then the server in the foreground.

`pvfs2-server -f` aborts when the storage space already exists ("storage space ... already exists;
aborting!", mkspace.c), so a restarted pod must skip it. The guard looks for `collections.db`, which
Trove creates in the metadata space as part of `-f` (dbpf.h COLLECTIONS_DBNAME), so the same script
works on a fresh emptyDir, a re-attached PVC and an existing hostPath directory. The loopback tests run
exactly these scripts, so what the pods run is what was tested.
"""

from __future__ import annotations

import shlex

SERVER_BINARY = "pvfs2-server"


def storage_init_script(conf_path: str, meta_storage: str, data_storage: str, alias_expr: str,
                        server: str = SERVER_BINARY) -> str:
    """POSIX sh: `mkdir -p` both spaces and run `pvfs2-server -f` unless the storage is there.

    `alias_expr` is substituted unquoted-safe (e.g. `"$POD_NAME"`), so the same text serves a pod
    (alias from the downward API) and a test (a literal alias).
    """
    meta = shlex.quote(meta_storage)
    data = shlex.quote(data_storage)
    return (
        "set -eu\n"
        f"mkdir -p {meta} {data}\n"
        f"if [ -e {meta}/collections.db ]; then\n"
        f"  echo \"storage for {alias_expr} exists in {meta}; not recreating it\"\n"
        "else\n"
        f"  echo \"creating storage for {alias_expr} in {meta} and {data}\"\n"
        f"  {shlex.quote(server)} -f -a {alias_expr} {shlex.quote(conf_path)}\n"
        "fi\n"
    )


def server_args(conf_path: str, alias: str, server: str = SERVER_BINARY) -> list[str]:
    """argv of the server container: foreground (`-d`) so the container lives as long as the server."""
    return [server, "-d", "-a", alias, conf_path]
