"""The one byte-count parser of the CLI, the lab and the benchmarks (pfslayout.units)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pfslayout.errors import InputError
from pfslayout.units import parse_size, parse_sizes

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@given(st.integers(1, 1 << 20), st.sampled_from(sorted(UNITS)), st.sampled_from(["", "B", "iB", "ib"]),
       st.booleans())
def test_a_count_with_any_unit_spelling_reads_as_powers_of_two(n: int, unit: str, suffix: str, lower: bool) -> None:
    text = f" {n}{unit}{suffix if unit else ''} "
    assert parse_size(text.lower() if lower else text) == n * UNITS[unit]


def test_lists_and_bounds() -> None:
    assert parse_sizes("16K,256K,4M") == [16 << 10, 256 << 10, 4 << 20]
    assert parse_size("0", "--min-bytes", minimum=0) == 0
    with pytest.raises(InputError, match=r"^--min-bytes: '4M,8M' is not a size; give bytes"):
        parse_size("4M,8M", "--min-bytes", minimum=0)  # one value, not a list silently cut to its first
    with pytest.raises(InputError, match=r"^--sizes: '0' is not a size"):
        parse_sizes("4K,0")
    with pytest.raises(InputError, match=r"^--holdout-sizes: '1Q' is not a size"):
        parse_sizes("16K,1Q", "--holdout-sizes")
    with pytest.raises(InputError, match=r"is not a size of at least 512"):
        parse_size("256", "--request-size", minimum=512)
    for bad in ("", "K", "-4K", "4.5K", "4KK"):
        with pytest.raises(InputError):
            parse_size(bad)
