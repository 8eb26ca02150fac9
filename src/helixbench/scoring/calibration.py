"""Which published answers a judge grades to be calibrated: a sample of each judged
benchmark's questions, stratified by tag and type, the same for every job of a config
(drawn from the question table by a seeded hash, whatever the runs or their order).

Each stratum gets its share of ``scoring.judge.calibration.size`` by largest remainder,
and at least one question where the size allows it (so a small tag is never left
unmeasured); within a stratum the questions come by ``sha256(seed:id)``. Every imported
system's answer to a sampled question is judged; its published verdict is the truth
the judge is measured against (``report.judges``).
"""

from __future__ import annotations

import hashlib
import math

from . import scorers_for

# Scorers that put a question to the judge with a benchmark's own prompts.
JUDGING = frozenset({"lb2_judge", "bix_judge", "labbench2", "bixbench"})
DEFAULT_SIZE = 300


def calibration_sample(questions, scoring: dict) -> set[str]:
    """The ids of the questions a judge grades of a published run."""
    settings = (scoring.get("judge") or {}).get("calibration") or {}
    size, seed = settings.get("size", DEFAULT_SIZE), settings.get("seed", 0)
    strata: dict[str, dict[tuple, list]] = {}
    for q in questions:
        if JUDGING & set(scorers_for(q.task, scoring)):
            key = (q.task, q.subtype or "")  # (a task is tag/mode; its type, subtype)
            strata.setdefault(q.benchmark, {}).setdefault(key, []).append(q.id)
    chosen: set[str] = set()
    for of in strata.values():
        shares = _allocation({k: len(v) for k, v in of.items()}, size)
        for key, ids in of.items():
            ranked = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).digest())
            chosen.update(ranked[: shares[key]])
    return chosen


def _allocation(sizes: dict, size: int) -> dict:
    """Each stratum's count: its proportional share by largest remainder, at least one
    each where ``size`` covers every stratum, never more than it holds."""
    total = sum(sizes.values())
    if size >= total:
        return dict(sizes)
    floor = 1 if size >= len(sizes) else 0
    quota = {k: max(floor, size * n / total) for k, n in sizes.items()}
    given = {k: min(sizes[k], math.floor(q)) for k, q in quota.items()}
    left = size - sum(given.values())
    for key in sorted(quota, key=lambda k: (given[k] - quota[k], k)):
        if left <= 0:
            break
        if given[key] < sizes[key]:
            given[key] += 1
            left -= 1
    while left < 0:  # (the floors took more than the size: the largest give back)
        key = max(given, key=lambda k: (given[k] - floor, k))
        given[key] -= 1
        left += 1
    return given
