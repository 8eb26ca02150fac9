"""Multiple-choice scores, as LAB-Bench and inspect_evals' ``precision_choice`` score:
the choice a run picked, by its place among the question's choices, never by its
text (a distractor can repeat the right answer's text: picking it is wrong).

A record says which choice was picked by the letter it answered and the order the
choices were shown in (``presented``: the question's own indices, in the order of
the letters); an answer without that order (an agent's) is read as the letter of
the choices in their own order, or as the text of one. Per question:

- ``accuracy``: 1 for the right choice, else 0 (a refusal, an unreadable answer, no
  answer);
- ``precision``: as accuracy, but a refusal is not scored (right among answered);
- ``coverage``: 0 for the refusal choice, else 1 (answered among asked; an answer
  that names no choice counts as answered and wrong, as the peer counts it).

Means over a benchmark's questions are the peer's figures.

A published run's record may carry its own key (BixBench's: the letters as its file
showed them, ``published.key``): its answer is then graded as BixBench's
str_verifier grades it (:func:`helixbench.sources.bixbench.mcq_grade`). A question
asked without the refusal choice (BixBench's) has no refusal to pick.
"""

from __future__ import annotations

import string

from ..sources.bixbench import mcq_grade

LETTERS = string.ascii_uppercase


def picked(question, record: dict) -> int | None:
    """The index (in the question's own order) of the choice a record picked, or None
    where its answer names none."""
    choices = question.choices or []
    answer = (record.get("answer") or "").strip()
    presented = record.get("presented") or list(range(len(choices)))
    if len(answer) == 1 and answer.upper() in LETTERS[: len(presented)]:
        return presented[LETTERS.index(answer.upper())]
    texts = [c.strip().lower() for c in choices]
    return texts.index(answer.lower()) if answer.lower() in texts else None


REFUSAL = "Insufficient information to answer the question"  # (LAB-Bench adds a stop)


def has_refusal(choices: list[str]) -> bool:
    """Whether a question's last choice is the refusal (LAB-Bench's, BixBench's wording):
    BixBench asks some without it."""
    return bool(choices) and choices[-1].rstrip(".").strip() == REFUSAL


class ChoiceScorer:
    """One of the three scores of a multiple-choice question (scored from the record:
    :attr:`per_record`)."""

    per_record = True

    def __init__(self, metric: str):
        self.metric = metric

    def score_record(self, question, record: dict) -> float | None:
        key = (record.get("published") or {}).get("key")
        if key:  # a published file's own letters
            right, refused = mcq_grade(record.get("answer") or "", key["target"], key["refusal"])
            choice = 0 if right else None
        elif not question.choices:
            return None  # not a multiple-choice question
        else:
            choice = picked(question, record)
            last = len(question.choices) - 1
            refused = choice == last and has_refusal(question.choices)
        if self.metric == "coverage":
            return 0.0 if refused else 1.0
        if self.metric == "precision" and refused:
            return None
        return 1.0 if choice == 0 else 0.0


CHOICE_SCORERS = {name: ChoiceScorer(name) for name in ("accuracy", "precision", "coverage")}
