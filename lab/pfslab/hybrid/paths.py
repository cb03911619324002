"""Where each ``lab hybrid`` variant's and replica's files are under the run's root: a directory per
variant, a hidden one per replica, and under a pinned replica its slot directories (a pinned static
variant is placed by the shim's ``spread`` instead, in its own directory). The shim's config, the IOR
launches and the look at what OrangeFS made of the files all name them through these.
"""

from __future__ import annotations

from pfslab.hybrid.plan import Plan
from pfslayout.planner.hints import SLOT_PREFIX
from pfslayout.shimconfig import replica_path


def variant_dir(root: str, variant: str) -> str:
    """A variant's directory (a 2-D key's ``:g`` spelled ``-gg``: ``2-D:2`` → ``2-D-g2``)."""
    return f"{root}/{variant.replace(':', '-g')}"


def replica_dir(root: str, key: str) -> str:
    """A replica's directory, hidden beside the variants' (as the operator names them: ``.replica-``)."""
    return f"{root}/.replica-{key.replace(':', '-g')}"


def slot_dir(directory: str, j: int) -> str:
    """Slot ``j`` of a pinned layout's directory (``planner.hints.SLOT_PREFIX``)."""
    return f"{directory}/{SLOT_PREFIX}{j}"


def rank_file(plan: Plan, variant: str, root: str, rank: int) -> str:
    """Where rank ``rank``'s file of ``variant`` (or of ``replica <key>``) is: IOR's ``<dir>/data.<rank>``,
    in slot ``slot_of(name)`` of a pinned layout (IOR's ``-o a@b@...`` gives rank k the k mod count-th name;
    the shim's ``slots`` gives a replica the same slot by name); a static variant's files are all in its
    directory (the shim's ``spread`` places them)."""
    name = f"/data.{rank:08d}"
    if variant.startswith("replica "):
        key = variant.split(" ", 1)[1]
        return replica_path(replica_dir(root, key), name, plan.layout(key).slots)
    return variant_dir(root, variant) + name


def ior_target(variant: str, root: str) -> str:
    """IOR's ``-o``: ``pvfs2:<dir>/data`` (the same path form for every variant: nothing is pinned by path)."""
    return f"pvfs2:{variant_dir(root, variant)}/data"
