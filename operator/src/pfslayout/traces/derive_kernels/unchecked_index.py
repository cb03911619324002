"""Array indices without numba's negative-index wraparound.

numba turns every array index of a signed integer type into ``i if i >= 0 else i + len`` (a shift, a mask
and an add on the address of each access) unless it can prove the index non-negative, which it cannot for an
index loaded from another array. In the time sweep, whose state is indexed by ids read from its columns,
those instructions and the registers they hold took ~30% of its time (31 -> 22 ms per 1 M requests). An
unsigned index is used as it is; ``ix`` reinterprets one (a no-op for the machine), for indices known to
be in range.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def ix(i: int) -> np.uint64:
    """``i`` (0 <= i < the array's length) as an index numba uses without a wraparound check."""
    return np.uint64(i)
