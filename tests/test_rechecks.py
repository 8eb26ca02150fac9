"""Snakemake's scheduler rechecks only while its rate limit holds jobs back
(helixbench.rechecks), with Snakemake's own rate limiter and scheduler."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from snakemake.scheduling.job_scheduler import JobRateLimiter
from snakemake.settings.types import MaxJobsPerTimespan

from helixbench.rechecks import HeldRecheck


def test_a_recheck_is_timed_only_while_the_limit_holds_jobs_back_and_one_at_a_time():
    limiter = JobRateLimiter(MaxJobsPerTimespan(2, "1s"))
    rounds = threading.Semaphore(0)
    recheck = HeldRecheck(limiter, rounds.release)
    recheck(0.05)  # no job started within the timespan: a finished job starts a round
    assert recheck.timer is None
    limiter.register_jobs(2)  # the limit reached: a round must come after the timespan
    for _ in range(50):  # (every round ends asking for one; one is pending)
        recheck(0.05)
    assert recheck.timer.daemon and recheck.timer.is_alive()
    assert rounds.acquire(timeout=10)
    assert not rounds.acquire(timeout=0.3)  # one round, not fifty


def test_the_workflow_gives_snakemakes_own_scheduler_its_recheck(tmp_path):
    """A workflow's onstart, as helixbench's: the recheck is taken by the installed
    Snakemake's scheduler, the jobs run, and Snakemake ends with them."""
    (tmp_path / "Snakefile").write_text(
        "from helixbench.rechecks import recheck_only_when_held\n\n"
        "onstart:\n"
        "    print('recheck taken:', recheck_only_when_held(workflow.scheduler))\n\n"
        "rule all:\n    input: expand('{i}.txt', i=range(6))\n\n"
        "rule one:\n    output: '{i}.txt'\n    shell: 'sleep 0.2; echo {wildcards.i} > {output}'\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--max-jobs-per-timespan", "2/1s"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "recheck taken: True" in done.stdout, done.stdout[-2000:]
    assert all((tmp_path / f"{i}.txt").is_file() for i in range(6))
    assert time.monotonic() - started < 120
