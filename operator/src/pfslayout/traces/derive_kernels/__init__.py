"""The numba kernels of ``derive``'s fast path (``traces/derive_fast.py``), one module per thing computed:

* ``start_order`` — requests in start order, one time window at a time, each filed under its end's window;
* ``overlap_counts`` — per request, the distinct ranks whose requests overlap it: p, and m per node;
* ``pair_groups`` — dense ids of (a, b) pairs, per-group modes (dominant sizes), sequential flags;
* ``time_argsort`` — a stable argsort of float64 times in O(N) expected time;
* ``unchecked_index`` — ``ix``, an array index numba uses without its negative-index wraparound.

This file imports nothing, on purpose: numba and llvmlite cost ~100 MB of memory, the operator process
imports ``pfslayout.traces`` without ever deriving a trace, and ``derive`` imports ``derive_fast`` (and so
these kernels) only when it runs. Importing a kernel module loads numba; importing this package does not
(``tests/unit/test_trace_derive_fast.py`` checks it).
"""
