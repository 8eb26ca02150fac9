"""Two measures of a gene-set reply beside its name's similarity (Hu et al., Nature
Methods 2025), for the robustness table: does a model still name a process when
the genes are random, and how sure does it say it is?

- ``named``: 1 where the reply names a process, 0 where it calls the genes a
  "System of unrelated proteins" (Hu et al.'s prompt asks for that name when no
  process stands out) or names nothing.
- ``confidence``: the model's own confidence score as the record states it (Hu
  et al.'s runs give one per set); no score where it states none.
"""

from __future__ import annotations

UNRELATED = "system of unrelated proteins"


def named(task: str, answer: str | None, gold, question: str = "") -> float | None:
    if not isinstance(gold, str):  # not a gene set
        return None
    text = " ".join((answer or "").lower().split())
    return 0.0 if not text or UNRELATED in text else 1.0


class StatedConfidence:
    """The record's ``confidence`` (scored from the record: :attr:`per_record`)."""

    per_record = True

    def score_record(self, question, record: dict) -> float | None:
        value = record.get("confidence")
        return None if value is None else float(value)


RECORD_SCORERS = {"confidence": StatedConfidence()}
