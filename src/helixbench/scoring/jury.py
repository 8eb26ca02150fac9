"""Several judges of one answer (``scoring.judge.model`` a list): each asked alone, their
verdicts combined by ``scoring.judge.rule``:

- ``majority`` (the default): the verdict more than half of all the judges gave (an
  undecided judge counts against every verdict: two of four is no majority);
- ``unanimous``: the verdict every judge gave.

Anything else is ``split``: undecided, no score, counted apart like a judge's own
undecided reply. Each judge's verdict is kept in the call's record (``jury``) for the
report's agreement (Krippendorff's alpha) and its list of every disagreement.
"""

from __future__ import annotations

from collections import Counter

RULES = ("majority", "unanimous")
SPLIT = "split"


def judge_names(scoring: dict) -> list[str]:
    """The judges ``scoring.judge.model`` names: none, one, or several (a jury)."""
    named = (scoring.get("judge") or {}).get("model")
    return [named] if isinstance(named, str) else list(named or [])


def combined(verdicts: list, rule: str = "majority"):
    """The jury's verdict of its judges' (any hashable values; None: undecided)."""
    if rule not in RULES:
        raise ValueError(f"scoring.judge.rule: {rule!r} is not one of {', '.join(RULES)}")
    if not verdicts:
        return SPLIT
    counts = Counter(v for v in verdicts if v is not None)
    if not counts:
        return SPLIT
    verdict, n = counts.most_common(1)[0]
    wanted = len(verdicts) if rule == "unanimous" else len(verdicts) // 2 + 1
    return verdict if n >= wanted else SPLIT
