"""Python's cyclic garbage collector, kept out of the way of jobs that hold much.

A score batch and a sweep's report make millions of objects that live to the end of a
run or of the report; the collector's passes (every 700 new objects, and a full pass
over everything now and then) went over them again and again. Reference counting frees
nearly all of what a job drops; the collector is only for cycles, so it runs rarely
here, and what outlives a stage is set aside (``gc.freeze``) from later passes.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

# The report's thresholds (Python's own are 700, 10, 10): a young pass every 100,000
# new objects, a full pass after a hundred of the middle ones.
RARE = (100_000, 50, 100)


@contextmanager
def collected_after():
    """The collector paused while a score batch's run is scored, then run once on what
    the run left, and what outlives it (the imports, the question table, the batch's
    kept verdicts) frozen. Its passes took about an eighth of a run's time (346 against
    301 ms a run of the whole question bank, a batch of 25)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()
        if enabled:
            gc.enable()


@contextmanager
def rare_collections():
    """The collector at :data:`RARE` thresholds (cycles still freed; memory as with
    Python's): a 1,000-run report took 29.4 s in place of 34.5 s."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*RARE)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def set_aside() -> None:
    """What is alive now (a report's summaries, held to its end) frozen: no later pass
    goes over it."""
    gc.freeze()
