"""Fixtures every operator test gets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pfslayout.operator import settings


@pytest.fixture(autouse=True)
def fresh_operator_settings() -> Iterator[None]:
    """settings.current() is read once per process; in a test process that would let one test's
    monkeypatched PFSLAYOUT_* variables leak into whichever test runs next on the same xdist worker (CI
    once failed that way), so every test starts and ends with the cache empty."""
    settings.current.cache_clear()
    yield
    settings.current.cache_clear()
