"""An optional judge: a model from the registry grades an answer against the gold
with 1, 0.5 or 0, the scale GeneGPT's authors used by hand for GeneHop (appendix D:
fully right, partly right, wrong)."""

from __future__ import annotations

import logging

from ..datasets.questions import gold_text
from ..models import ask, create_model
from .jury import SPLIT, combined
from .verdicts import read_grade_number

log = logging.getLogger("helixbench.judge")

JUDGE_PROMPT = """You grade answers to genomics questions against a reference answer.
Give 1 if the answer says what the reference says, 0.5 if it is partly right (right \
in part, or too vague to be fully right), and 0 if it is wrong or gives no answer.
Reply with the grade only.

Question: {question}
Reference answer: {gold}
Answer to grade: {answer}
Grade:"""


class JudgeScorer:
    """One judge's grade, or a jury's by its rule (:mod:`.jury`: the grade a majority
    gave, or every judge's; else no score)."""

    def __init__(self, judges: dict[str, dict], cache=None, max_tokens: int = 8, rule="majority"):
        self.name = ", ".join(judges)
        self.models = {n: create_model(spec, cache=cache) for n, spec in judges.items()}
        self.max_tokens = max_tokens
        self.rule = rule

    def identity(self) -> dict:
        found = [{"judge": n, **m.identity()} for n, m in self.models.items()]
        return found[0] if len(found) == 1 else {"judges": found, "rule": self.rule}

    def __call__(self, task: str, answer: str | None, gold, question: str = "") -> float | None:
        if not answer:
            return 0.0
        prompt = JUDGE_PROMPT.format(question=question, gold=gold_text(gold), answer=answer)
        grades = []
        for name, model in self.models.items():
            reply = ask(model, prompt, question, "judge", self.max_tokens)
            grades.append(read_grade_number(reply, answer))
            if grades[-1] is None:
                log.warning("judge %s's reply %r has no one grade", name, reply)
        grade = grades[0] if len(grades) == 1 else combined(grades, self.rule)
        return None if grade == SPLIT else grade
