"""The client side: a `pvfs2tab` line naming every server as a config server.

libpvfs2 (admin tools, ROMIO) reads the first entry of type `pvfs2` from `$PVFS2TAB_FILE`. Listing
every server lets a client fetch the configuration from whichever answers first.
"""

from __future__ import annotations

import re

from pfslayout.errors import InputError
from pfslayout.orangefs.fsconf import FsConf

DEFAULT_MOUNT_PATH = "/mnt/orangefs"


def render_pvfs2tab(conf: FsConf, mount_path: str = DEFAULT_MOUNT_PATH) -> str:
    if not re.fullmatch(r"/[^\s\x00]*[^/\s\x00]", mount_path):
        raise InputError("client.mountPath", f"{mount_path!r} is not an absolute path without a trailing '/'",
                         "use e.g. /mnt/orangefs")
    return f"{conf.pvfs2tab_uri()} {mount_path} pvfs2 defaults,noauto 0 0\n"
