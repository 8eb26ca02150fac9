"""Snakemake's scheduler rechecks only while its rate limit holds jobs back.

Snakemake 9 (``--max-jobs-per-timespan``, 100 jobs a second by default) ends every
scheduling round by starting a timer that runs another round one timespan later, and
that round starts another: each job that ends starts a chain of rounds that lasts the
whole workflow. A round asks the size of every input of the waiting jobs (its
scheduler's input sizes, about a millisecond a file), so a sweep's score jobs, each
waiting on hundreds of shards, kept Snakemake's own process on most of a core.

:func:`recheck_only_when_held` (called by the workflow's ``onstart``, after Snakemake
made its scheduler and before the first round) gives the scheduler a recheck that
runs only where the limit may hold a job back (jobs started within its timespan),
one timer at a time, and a daemon timer, so that Snakemake's process ends with its
workflow. A job that ends still starts a round, as before. Where the scheduler is not
as this module knows it (another Snakemake), it is left as it is.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class HeldRecheck:
    """A scheduler's ``_schedule_reevalutation``: a timer only while ``limiter`` has
    started jobs within its timespan, and at most one pending."""

    def __init__(self, limiter, release):
        self.limiter, self.release = limiter, release
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()

    def __call__(self, delay) -> None:
        with self.lock:
            if self.limiter.get_free_jobs() >= self.limiter.max_jobs:
                return  # nothing is held back: a job that ends starts the next round
            if self.timer is not None and self.timer.is_alive():
                return
            self.timer = threading.Timer(delay, self.release)
            self.timer.daemon = True
            self.timer.start()


def recheck_only_when_held(scheduler) -> bool:
    """Give ``scheduler`` (Snakemake's ``workflow.scheduler``) a :class:`HeldRecheck`;
    True where it did (a scheduler with a rate limit, as Snakemake 9 makes it)."""
    limiter = getattr(scheduler, "job_rate_limiter", None)
    opened = getattr(scheduler, "_open_jobs", None)
    if limiter is None or opened is None or not hasattr(scheduler, "_schedule_reevalutation"):
        return False
    if not all(hasattr(limiter, name) for name in ("get_free_jobs", "max_jobs")):
        log.debug("Snakemake's rate limiter is not as expected; its rechecks left as they are")
        return False
    scheduler._schedule_reevalutation = HeldRecheck(limiter, opened.release)
    return True
