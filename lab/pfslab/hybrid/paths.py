"""Where each ``lab hybrid`` variant's and replica's files are under the run's root: a directory per
variant, a hidden one per replica, and under a pinned layout its slot directories. The shim's config,
the IOR launches and the look at what OrangeFS made of the files all name them through these.
"""

from __future__ import annotations

from pfslab.hybrid.plan import DEFAULT, HYBRID, Plan
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
    the shim's ``slots`` gives a replica the same slot by name)."""
    name = f"/data.{rank:08d}"
    if variant.startswith("replica "):
        key = variant.split(" ", 1)[1]
        return replica_path(replica_dir(root, key), name, plan.layout(key).slots)
    if variant in (DEFAULT, HYBRID):
        return variant_dir(root, variant) + name
    return replica_path(variant_dir(root, variant), name, plan.layout(variant).slots)


def ior_targets(plan: Plan, variant: str, root: str) -> str:
    """IOR's ``-o``: ``<dir>/data``, or for a pinned static layout one name per slot joined by ``@``."""
    directory = variant_dir(root, variant)
    slots = plan.layout(variant).slots if variant not in (DEFAULT, HYBRID) else 0
    if slots > 1:
        return "@".join(f"pvfs2:{slot_dir(directory, j)}/data" for j in range(slots))
    return f"pvfs2:{directory}/data"
