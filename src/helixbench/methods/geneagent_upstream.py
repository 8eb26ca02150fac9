"""``geneagent`` as GeneAgent wrote it (``prompts: upstream``, the default): what
``main_cascade.py`` and ``worker.py`` (ncbi-nlp/GeneAgent at the pinned commit) send
for one gene set, call for call, so that the kind and the seed system run
unchanged (``original: geneagent-cascade``) share every response-cache entry.

- **Prompts** are read from the pinned upstream files, never copied: their module
  level templates (``baseline``, ``topic``, ``analysis``, ``modification``,
  ``summarization`` and their instructions) and the verifier's messages in
  ``AgentPhD.inference``, evaluated from the files' syntax trees.
- **Calls** are built as the model gateway builds them from what openai 0.28 sends
  (:func:`~helixbench.gateway.model_api.gateway_request`: temperature 0, no
  ``max_tokens``, the functions as tools), and each reply is appended as the
  gateway's own message (:func:`~helixbench.gateway.model_api.reply_message`).
- **The cascade**: generation; claims about the name (a JSON list); each claim
  verified by the verifier's loop (up to 20 turns of upstream's eight functions,
  :mod:`helixbench.tools.geneagent_apis`, until a ``Report:``); the modification
  turn; claims about the updated analysis (the name's text with every run of other
  characters made ``_``, as upstream does); their verification; the summarisation
  turn, appended as upstream appends it (an assistant message). Upstream's checks of
  claims and reports are kept (a claim or report whose text ends in characters
  outside upstream's set has that run replaced by ``_``). Upstream's one-second
  sleep before each verifier turn is not slept (it paced a shared Azure quota).
- GO sets are verified without ``get_enrichment_for_gene_set`` (upstream's GO list
  of functions); other datasets with all eight.

Any exception upstream's ``try`` would catch ends the set as ``geneagent_error``,
its message in the record; the answer is the final reply's name (what follows the
first ``: `` of its first line, as GeneAgent's ``evaluate.ipynb`` reads it), the
whole reply in the last model event.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..gateway.model_api import gateway_request, reply_message
from ..sources.geneagent_outputs import block_name
from ..tools.geneagent_apis import Requests, functions, upstream_docs
from ..transcripts import Event, QuestionResult
from .session import Session, Stopped, last_message, parse_verdict

MAIN_NAMES = (
    "system",
    "baseline",
    "system_verify",
    "topic",
    "topic_instruction",
    "analysis",
    "analysis_instruction",
    "modification",
    "modification_instruction",
    "summarization",
    "summarization_instruction",
    "reposits",
)
# The characters main_cascade.py lets a claim keep, worker.py a report, and what the
# updated name is reduced to before the analysis claims are asked for.
CLAIM_CHARS = re.compile(r"^[a-zA-Z0-9,.;?!*()_-]+$")
CLAIM_TAIL = re.compile(r"[^a-zA-Z0-9,.;?!*()_-]+$")
REPORT_CHARS = re.compile(r"^[a-zA-Z0-9_-]+$")
REPORT_TAIL = re.compile(r"[^a-zA-Z0-9_-]+$")
NAME_RUNS = re.compile(r"[^a-zA-Z0-9-_]+")
MAX_TURNS = 20  # the verifier's loop
REPORT = "Report: "
GO_WITHOUT = "get_enrichment_for_gene_set"
_UNSET = object()


@dataclass(frozen=True)
class UpstreamPrompts:
    main: dict  # main_cascade.py's templates, by name
    verifier_system: str
    verifier_content: object  # claim -> the verifier's first user message
    nudge: str  # the user turn after a reply without "Report: "
    function_result: object  # (params, response) -> the function message
    function_error: object  # (params, exception) -> the function message
    report_error: object  # exception -> the assistant turn after a failed reply
    docs: dict  # function name -> its schema


def _evaluate(node, **names):
    """A literal, an f-string or a lambda of upstream's, with ``names`` in scope."""
    code = compile(ast.Expression(body=node), "<geneagent>", "eval")
    return eval(code, {"__builtins__": {}}, names)  # noqa: S307 (pinned upstream syntax)


def _template(node, *names: str):
    """An f-string node as a function of ``names``."""
    return lambda *values: _evaluate(node, **dict(zip(names, values, strict=True)))


def read_prompts(folder: Path) -> UpstreamPrompts:
    """The prompts of main_cascade.py and worker.py in ``folder`` (a fetched copy of
    the pinned commit)."""
    folder = Path(folder)
    main = {}
    for node in ast.parse((folder / "main_cascade.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in MAIN_NAMES:
            main[node.targets[0].id] = _evaluate(node.value)
    worker = ast.parse((folder / "worker.py").read_text(encoding="utf-8"))
    inference = next(
        n for n in ast.walk(worker) if isinstance(n, ast.FunctionDef) and n.name == "inference"
    )
    assigned, messages = {}, []
    for node in ast.walk(inference):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.JoinedStr):
            assigned[getattr(node.targets[0], "id", None)] = node.value
        if isinstance(node, ast.Dict):
            keys = [getattr(k, "value", None) for k in node.keys]
            if "content" in keys and "role" in keys:
                role = node.values[keys.index("role")].value
                messages.append((role, node.values[keys.index("content")]))
    by_names = {}
    for role, value in messages:
        if isinstance(value, ast.JoinedStr | ast.Constant):
            used = frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
            by_names[role, used] = value
    missing = [n for n in MAIN_NAMES if n not in main]
    if missing or not {"system", "content", "function_response"} <= set(assigned):
        raise ValueError(f"{folder}: not GeneAgent's main_cascade.py and worker.py ({missing})")
    return UpstreamPrompts(
        main=main,
        verifier_system=_evaluate(assigned["system"]),
        verifier_content=_template(assigned["content"], "claim"),
        nudge=_evaluate(by_names["user", frozenset()]),
        function_result=_template(
            assigned["function_response"], "function_params", "function_response"
        ),
        function_error=_template(
            by_names["function", frozenset({"function_params", "E"})], "function_params", "E"
        ),
        report_error=_template(by_names["assistant", frozenset({"E"})], "E"),
        docs=upstream_docs(folder / "apis"),
    )


class _Calls(Session):
    """One set's model calls, each built as the model gateway builds it from what
    openai 0.28 sends, and answered as the gateway answers it."""

    def chat(self, messages: list, functions: list | None = None) -> dict:
        body = {"messages": messages, "temperature": 0}
        if functions:
            body["functions"] = functions
        request, legacy = gateway_request("chat", body, self.question_id, self.question, self.calls)
        completion = self.send(request, last_message(messages), continues=len(messages) > 2)
        return reply_message(completion, legacy)


@dataclass(frozen=True)
class UpstreamGeneAgent:
    """The cascade of one gene set, as main_cascade.py's ``GeneAgent`` runs it."""

    prompts: UpstreamPrompts
    executor: object
    dataset: str

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        calls = _Calls(question_id, question, model, result)
        requests = Requests(self.executor, question_id)
        try:
            final = self._cascade(calls, requests, question)
        except Stopped as stop:
            return result.finish(answer=None, error=stop.error)
        except Exception as exc:  # upstream's try catches every exception of a set
            data = {"stage": "error", "claim": None, "verdict": None, "report": repr(exc)}
            result.events.append(Event("claim", calls.calls, data))
            return result.finish(answer=None, error="geneagent_error")
        finally:
            self._log_requests(result, requests)
        return result.finish(answer=block_name(final) or final)

    def _cascade(self, calls: _Calls, requests: Requests, question: str) -> str:
        main = self.prompts.main
        genes = question.replace("/", ",").replace(" ", ",")
        messages = [
            {"role": "system", "content": main["system"]},
            {"role": "user", "content": main["baseline"](genes)},
        ]
        summary = calls.chat(messages)
        messages.append(summary)
        process = summary["content"].split("\n")[0].split("Process: ")[1]
        topic = main["topic"](genes, process) + main["topic_instruction"]
        claims = self._claims(calls, topic)
        checked = self._verify_all(calls, requests, claims, "name")
        modification = main["modification"](checked) + main["modification_instruction"]
        messages.append({"role": "user", "content": modification})
        updated = calls.chat(messages)
        messages.append(updated)
        updated_text = str(updated["content"])
        if not CLAIM_CHARS.match(updated_text):
            updated_text = NAME_RUNS.sub("_", updated_text)
        claims = self._claims(calls, main["analysis"](updated_text) + main["analysis_instruction"])
        checked = self._verify_all(calls, requests, claims, "narrative", as_text=True)
        summarising = main["summarization"](checked) + main["summarization_instruction"]
        messages.append({"role": "assistant", "content": summarising})  # as upstream does
        return calls.chat(messages)["content"]

    def _claims(self, calls: _Calls, prompt: str):
        verify = [
            {"role": "system", "content": self.prompts.main["system_verify"]},
            {"role": "user", "content": prompt},
        ]
        return json.loads(calls.chat(verify)["content"])

    def _verify_all(self, calls, requests, claims, stage: str, as_text: bool = False) -> str:
        checked = ""
        for claim in claims:  # whatever the JSON holds, iterated as upstream iterates it
            if not CLAIM_CHARS.match(claim):
                claim = CLAIM_TAIL.sub("_", claim)
            report = self._inference(calls, requests, str(claim) if as_text else claim)
            checked += f"Original_claim:{claim}" + f"Verified_claim:{report}"
            verdict = parse_verdict(report)
            data = {"stage": stage, "claim": claim, "verdict": verdict, "report": report}
            calls.result.events.append(Event("claim", calls.calls, data))
        return checked

    def _inference(self, calls: _Calls, requests: Requests, claim: str) -> str:
        """worker.py's ``AgentPhD.inference``: the verifier's loop for one claim."""
        prompts = self.prompts
        names = [
            n for n in prompts.main["reposits"] if not (self.dataset == "GO" and n == GO_WITHOUT)
        ]
        offered = [prompts.docs[n] for n in names]
        callable_ = {n: f for n, f in functions(requests).items() if n in names}
        messages = [
            {"role": "system", "content": prompts.verifier_system},
            {"role": "user", "content": prompts.verifier_content(claim)},
        ]
        params = _UNSET  # upstream's function_params: kept from one turn to the next
        for _ in range(MAX_TURNS):
            message = calls.chat(messages, offered)
            requests.index = calls.calls - 1  # the calls this reply asks for
            if "function_call" in message:
                name = message["function_call"]["name"]
                try:
                    params = json.loads(message["function_call"]["arguments"])
                    response = callable_[name](**params)
                    content = prompts.function_result(params, response)
                except Exception as exc:  # noqa: BLE001 (upstream hands any error back)
                    if params is _UNSET:  # upstream's handler fails on its unset name
                        raise
                    content = prompts.function_error(params, exc)
                messages.append({"role": "function", "name": name, "content": content})
                continue
            try:
                if REPORT in message["content"]:
                    report = message["content"].split(REPORT)[-1]
                    return report if REPORT_CHARS.match(report) else REPORT_TAIL.sub("_", report)
                messages.append({"role": "user", "content": prompts.nudge})
            except Exception as exc:  # noqa: BLE001 (a reply without text, as upstream)
                messages.append({"role": "assistant", "content": prompts.report_error(exc)})
        return "Failed."

    @staticmethod
    def _log_requests(result: QuestionResult, requests: Requests) -> None:
        for request in requests.results:
            result.events.append(Event("tool", request.index, request.describe("")))
