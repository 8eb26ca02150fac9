"""A benchmark's own grading prompt put to a model of the registry (LABBench2's judges,
BixBench's grader): the one judge mechanism both use.

Each call is the model's (its response cache keeps it, so a rerun replays it) and is
recorded under its question (:attr:`PromptJudge.calls`: the prompt's name, the
verdict, the reason and the model event), which the score job writes to
``results/judge-calls/``. A judge that cannot decide (its own ``unsure``, a reply with
no verdict, negated or contradicted: :mod:`.verdicts`; a call it refused) gives no
score: counted apart, never as wrong. A judge that cannot be reached fails the score
job (its cached calls are kept: the next run replays them), never a silent gap.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ..models import CompletionRequest, ModelError, backend, create_model
from .fence import fence
from .jury import combined

log = logging.getLogger("helixbench.judge")
DECIDED = ("correct", "incorrect")


class PromptJudge:
    """Subclasses say which prompt a question gets (:meth:`prompt`) and how a reply is
    read (:meth:`verdict`); :meth:`judge` asks each judge once per question (several:
    a jury, :mod:`.jury`)."""

    per_record = True
    scorer = "judge"  # the scorer's name, in the judge-call file
    tools: tuple = ()  # offered to a chat model (LABBench2's structured result)

    def __init__(
        self,
        judges: dict[str, dict] | None,
        prompts: Path,
        cache=None,
        fenced: bool = True,
        rule: str = "majority",
        only: set[str] | None = None,
    ):
        """``judges``: name -> config entry of each judge (none: no judge scores);
        ``only``: the questions it grades (a published run: its calibration sample)."""
        self.judges = dict(judges or {})
        self.name = ", ".join(self.judges)
        self.fenced = fenced  # the answer fenced in the prompt (:mod:`.fence`), or as upstream
        self.rule = rule
        self.only = only
        self.models = {n: create_model(spec, cache=cache) for n, spec in self.judges.items()}
        self.chats = {n: backend(spec["backend"]).chats(spec) for n, spec in self.judges.items()}
        self._prompts_path = Path(prompts)
        self._prompts: dict | None = None
        self.calls: dict[str, dict] = {}  # question id -> its call, verdict and events

    @property
    def model(self):
        """The judge (None: none), or the first of a jury."""
        return next(iter(self.models.values()), None)

    def identity(self) -> dict:
        found = [{"judge": n, **m.identity()} for n, m in self.models.items()]
        if len(found) > 1:
            return {"judges": found, "rule": self.rule}
        return found[0] if found else {}

    @property
    def prompts(self) -> dict[str, str]:
        if self._prompts is None:
            from ..datasets.upstream import python_constants

            self._prompts = python_constants(self._prompts_path.read_text(encoding="utf-8"))
        return self._prompts

    def prompt(self, question, answer: str) -> tuple[str, str]:
        """(the prompt's name, the prompt) a question and its answer are judged with."""
        raise NotImplementedError

    def shown(self, answer: str, template: str) -> str:
        """The answer as the prompt ``template`` gets it: fenced, or as it is."""
        return fence(answer, template) if self.fenced else answer

    def verdict(self, text: str, tool_calls, answer: str) -> tuple[str, str]:
        """(``correct`` | ``incorrect`` | another word: undecided, the reason), the
        graded ``answer``'s own words never read as the judge's (:mod:`.verdicts`)."""
        raise NotImplementedError

    def judge(self, question, answer: str) -> tuple[float, str] | None:
        """The question's score and reason by the judge (None: undecided, or not one it
        grades)."""
        if self.only is not None and question.id not in self.only:
            return None
        if question.id not in self.calls:
            self.calls[question.id] = self._ask_all(question, answer)
        call = self.calls[question.id]
        if call["verdict"] not in DECIDED:
            return None
        return float(call["verdict"] == "correct"), call["reason"]

    def _ask_all(self, question, answer: str) -> dict:
        name, prompt = self.prompt(question, answer)
        asked = {n: self._ask(n, m, question, prompt, name, answer) for n, m in self.models.items()}
        call = {"scorer": self.scorer, "prompt": name, "fenced": self.fenced}
        if len(asked) == 1:
            ((_, (verdict, reason, event)),) = asked.items()
            return {**call, "verdict": verdict, "reason": reason, "events": [event]}
        said = [v for v, _, _ in asked.values()]
        # (judges all undecided alike: that kind, else the rule over the decided ones)
        verdict = (
            said[0]
            if len(set(said)) == 1
            else combined([v if v in DECIDED else None for v in said], self.rule)
        )
        votes = "; ".join(f"{n}: {v}" for n, (v, _, _) in asked.items())
        reasons = [r for v, r, _ in asked.values() if v == verdict]
        return {
            **call,
            "verdict": verdict,
            "reason": f"{self.rule} of {len(asked)} ({votes})"
            + (f": {reasons[0]}" if reasons else ""),
            "rule": self.rule,
            "jury": [{"judge": n, "verdict": v, "reason": r} for n, (v, r, _) in asked.items()],
            "events": [event for _, _, event in asked.values()],
        }

    def _ask(self, judge: str, model, question, prompt: str, name: str, answer: str):
        """One judge's (verdict, reason, model event)."""
        from ..methods import model_event

        chats = self.chats[judge]
        request = CompletionRequest(
            prompt=prompt,
            stop=(),
            max_tokens=1024,
            temperature=0.0,
            question_id=f"{self.scorer}:{question.id}",
            question=question.text,
            call_index=0,
            messages=({"role": "user", "content": prompt},) if chats else None,
            tools=self.tools if chats and self.tools else None,
        )
        started = time.perf_counter()
        completion = error = None
        try:
            completion = model.complete(request)
        except ModelError as exc:
            if exc.transient:  # (its server's state: the job fails, its cached calls kept)
                raise ModelError(f"the judge {judge!r} cannot be reached: {exc}") from None
            error = exc  # recorded: a judge that refuses the call decides nothing
            log.warning("%s call (%s) for %s failed: %s", self.scorer, judge, question.id, exc)
        except Exception as exc:  # (recorded likewise: counted apart, never as wrong)
            error = exc
            log.warning("%s call (%s) for %s failed: %s", self.scorer, judge, question.id, exc)
        calls = completion.tool_calls if completion is not None else None
        if completion is None:
            verdict, reason = "unparseable", str(error)
        else:
            verdict, reason = self.verdict(completion.text, calls, answer)
        event = model_event(
            request, {"prompt": prompt, "prompt_name": name, "judge": judge}, completion,
            started, error, tool_calls=list(calls) if calls else None,
        )  # fmt: skip
        return verdict, reason, vars(event)


class FirstVerdict:
    """A primary score: the first of its parts that gives a verdict (a benchmark's own
    published one, then a deterministic rule, then a judge); its reason names which."""

    per_record = True

    def __init__(self, parts: list[tuple[str, object]]):
        self.parts = parts

    def score_record(self, question, record: dict):
        for name, scorer in self.parts:
            found = scorer.score_record(question, record)
            if found is not None:
                return found[0], f"{name}: {found[1]}"
        return None
