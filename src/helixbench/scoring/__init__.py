"""Scorers, registered by name. A scorer maps (task, answer, gold) to a score in [0, 1],
or None where it does not score that task."""

from __future__ import annotations

from collections.abc import Callable

from .genegpt import genegpt_score

Scorer = Callable[[str, "str | None", object], "float | None"]

SCORERS: dict[str, Scorer] = {"genegpt": genegpt_score}


def get_scorer(name: str) -> Scorer:
    try:
        return SCORERS[name]
    except KeyError:
        raise KeyError(f"unknown scorer {name!r}; available: {', '.join(SCORERS)}") from None
