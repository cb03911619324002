"""What the reconcilers share, as API I/O: applying directory hints through a Job (`apply_hints.py`),
one lock per custom object (`locks.py`), posting Events (`events.py`) and the timestamps written into
statuses and Events (`clock.py`)."""
