"""An optional judge: a model from the registry grades an answer against the gold
with 1, 0.5 or 0, the scale GeneGPT's authors used by hand for GeneHop (appendix D:
fully right, partly right, wrong)."""

from __future__ import annotations

import logging

from ..datasets.questions import gold_text
from ..models import ask, create_model
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
    def __init__(self, name: str, model_spec: dict, cache=None, max_tokens: int = 8):
        self.name = name
        self.model = create_model(model_spec, cache=cache)
        self.max_tokens = max_tokens

    def identity(self) -> dict:
        return {"judge": self.name, **self.model.identity()}

    def __call__(self, task: str, answer: str | None, gold, question: str = "") -> float | None:
        if not answer:
            return 0.0
        prompt = JUDGE_PROMPT.format(question=question, gold=gold_text(gold), answer=answer)
        reply = ask(self.model, prompt, question, "judge", self.max_tokens)
        grade = read_grade_number(reply, answer)
        if grade is None:
            log.warning("judge reply %r has no one grade; the answer is left unscored", reply)
        return grade
