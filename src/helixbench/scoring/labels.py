"""Scorers for answers that are one label of a few.

- ``tf_label`` (GeneTuring 2025's TF regulation; gold ``Activation`` or
  ``Repression``): the answer (the text after its last ``Answer:``) names activation
  (activation, activates, activator, ...) or repression (repression, represses,
  repressor, inhibition, inhibits, ...); 1 when it names the gold's alone, else 0.
- ``yes_no`` (BioASQ yes/no; gold ``yes`` or ``no``): the answer's first word where it
  is yes or no, else the one of the two it holds alone; 1 when that is the gold.
"""

from __future__ import annotations

import re

from .strict import after_last_answer

TF_LABELS = {
    "Activation": re.compile(r"\bactivat", re.IGNORECASE),
    "Repression": re.compile(r"\b(?:repress|inhibit)", re.IGNORECASE),
}
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def _body(answer: str | None) -> str:
    return after_last_answer(answer).strip()


def tf_label(task: str, answer: str | None, gold, question: str = "") -> float | None:
    if not isinstance(gold, str):
        return None
    body = _body(answer)
    named = [label for label, pattern in TF_LABELS.items() if pattern.search(body)]
    return float(named == [gold.strip()])


def yes_no(task: str, answer: str | None, gold, question: str = "") -> float | None:
    if not isinstance(gold, str):
        return None
    body = _body(answer)
    first = re.match(r"\W*(\w+)", body)
    if first and first.group(1).lower() in ("yes", "no"):
        said = first.group(1).lower()
    else:
        found = {w.lower() for w in _YES_NO.findall(body)}
        said = found.pop() if len(found) == 1 else None
    return float(said == gold.strip().lower())
