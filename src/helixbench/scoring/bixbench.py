"""BixBench's open answers scored as its code grades them, side by side
(:mod:`helixbench.sources.bixbench` has the rules; multiple choice is scored by
:mod:`.choice`).

- ``bix_published``: BixBench's grade as its file publishes it.
- ``bix_verifier``: helixbench's own string and range verifiers: ``str_verifier``
  questions by BixBench's equality and partial match (no verdict where BixBench then
  asks its LLM), ``range_verifier`` ones by the numbers the answer states against the
  range (BixBench's open-answer grader asks its LLM there); ``llm_verifier`` ones have
  none.
- ``bix_judge``: BixBench's grading prompts (``OPEN_ENDED_GRADING_PROMPT``, its range
  prompt for a range), read from the pinned ``bixbench/prompts.py``, put to
  ``scoring.judge.model``; ``<grade> correct </grade>`` 1, ``incorrect`` or ``refused``
  0, a reply with no grade no score (BixBench counts it wrong: counted apart here).
- ``bixbench`` (primary): the published grade where the record has one; else the
  verifier's; else the judge's: BixBench's own order.
"""

from __future__ import annotations

from ..sources.bixbench import range_verdict, str_verdict
from .prompt_judge import PromptJudge
from .verdicts import read_tagged


class BixBenchPublished:
    per_record = True

    def score_record(self, question, record: dict):
        if record.get("error") == "missing_in_source":  # (the imports' caption: a miss)
            return 0.0, "not in the source's file: scored as a miss"
        published = record.get("published")
        if not published or "key" in published:
            return None
        return float(published["value"]), f"BixBench's grade ({published.get('mode')})"


def verifier_verdict(question, answer: str | None) -> tuple[float, str] | None:
    """helixbench's str and range verifiers (module docstring), or None."""
    mode, target = question.subtype, str(question.gold)
    if mode == "str_verifier":
        right, reason = str_verdict(str(answer or ""), target)
    elif mode == "range_verifier":
        right, reason = range_verdict(str(answer or ""), target)
    else:
        return None
    return None if right is None else (float(right), reason)


class BixBenchVerifier:
    per_record = True

    def score_record(self, question, record: dict):
        if record.get("error") == "missing_in_source":
            return None
        return verifier_verdict(question, record.get("answer"))


class BixBenchJudge(PromptJudge):
    """BixBench's grading prompts; its grade between ``<grade>`` tags."""

    scorer = "bix_judge"

    def score_record(self, question, record: dict):
        if self.model is None or record.get("error") == "missing_in_source":
            return None
        return self.judge(question, str(record.get("answer") or ""))

    def prompt(self, question, answer: str) -> tuple[str, str]:
        ranged = question.subtype == "range_verifier"
        name = "OPEN_ENDED_RANGE_GRADING_PROMPT" if ranged else "OPEN_ENDED_GRADING_PROMPT"
        template = self.prompts[name]
        shown = self.shown(answer, template)
        values = {"question": question.text, "target": question.gold, "predicted": shown}
        return name, template.format(**values)

    def verdict(self, text: str, tool_calls, answer: str) -> tuple[str, str]:
        """The grade the judge gave (every ``<grade>`` of its own, none the answer's:
        upstream's regex takes the first the reply holds, quoted or not)."""
        grade, reason = read_tagged(text, "grade", answer)
        if grade is None:
            return reason, (text or "").strip()
        known = {"correct": "correct", "incorrect": "incorrect", "refused": "incorrect"}
        return known.get(grade, "unparseable"), reason
