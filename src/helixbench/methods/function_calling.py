"""Question answering the way today's chat models call tools, and without tools.

- ``function-calling``: the model gets a system prompt (the task and the answer
  contract) and NCBI's web APIs as functions (:mod:`helixbench.tools.functions`:
  ``esearch``, ``efetch``, ``esummary``, ``elink``, ``blast``), which it calls
  through the chat API's function calling (an OpenAI-compatible server) or, for a
  local model, through its chat template (or the ``<tool_call>`` text convention
  where the template renders no tools). Each round the model may call functions
  (several in one turn are run in order); their results come back as tool
  messages; a reply without a call is the answer. Past ``max_tool_rounds`` rounds
  the question stops (``numError``, as GeneGPT's loop records it).
- ``no-tools``: the same questions and answer contract, no functions: one call.

The answer is the reply from its last line that starts with ``Answer:`` (the
contract; the lines after it belong to the answer), else the reply. A multiple-choice
question (LAB-Bench) is asked as the method's ``choices`` variant asks it
(:mod:`.choices`: inspect_evals' prompt or FutureHouse's), as the only message of a
no-tools call, after the tools' system prompt with tools; its answer is the letter
the variant reads, and the record keeps the order its choices were shown in.

Options, each a method setting, so each can be ablated like GeneGPT's mask:
``tool_docs`` (the functions' descriptions in their schemas; off: names only),
``demonstrations`` (GeneGPT's four demonstrations as chat turns with function
calls, their replies from the method's snapshot, as GeneGPT's header embeds them:
a like-for-like comparison with the text protocol), ``max_tool_rounds``,
``reply_cap`` (bytes of a function's result the model sees, cut before decoding
as GeneGPT cuts replies, so a seeded recorded reply and a live one show alike),
``parallel_tool_calls`` (false: one call a turn; a further call in the same turn
is answered with a tool error), ``max_tokens``, and for multiple choice ``choices``
(``inspect`` or ``futurehouse``) and ``choice_seed`` (42).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..datasets.snapshots import Snapshot
from ..digests import sha256_text
from ..models import (
    CompletionRequest,
    ContextLengthError,
    ModelError,
    ModelMiss,
)
from ..tools.functions import call_of_url, reply_text
from ..transcripts import Event, QuestionResult
from . import Prepared, model_event
from .choices import presentations
from .genegpt import DEMONSTRATIONS, demonstration_urls
from .toolsets import DEFAULT, toolset

DEFAULT_MAX_TOKENS = 512
# Versioned with the prompts: a change of wording is another method.
PROMPT_VERSION = "qa-1"
TASK = "You answer questions about genes, genetic variants, diseases and DNA sequences. "
WITH_TOOLS = (
    "You can call NCBI's web APIs as functions: E-utils for the Entrez databases (gene for "
    "genes, snp for variants, omim for genetic diseases, and others) and BLAST for DNA "
    "sequences. Call them as often as you need, one question at a time, then answer. "
)
WITH_CODE = (
    "You can run code as functions (python, bash): to compute on sequences and data, and to "
    "call these APIs. A question's files stay between its calls. "
)
WITH_REST = "You can query Ensembl's and UniProt's REST APIs as functions. "
CONTRACT = (
    "End your reply with the final answer, as 'Answer: <answer>', with the answer alone: a "
    "gene symbol, gene symbols separated by commas, a chromosome (chr8), a location "
    "(chr8:100-200), Yes or No, a species, a sequence, or, where the question asks for a "
    "function or a definition, a sentence or two."
)


@dataclass(frozen=True)
class FunctionCalling:
    """Function calling over NCBI's web APIs, or (``tools`` off) no tools at all."""

    demonstrations: tuple[dict, ...] = ()  # chat turns before the question
    tools: bool = True
    toolsets: tuple[str, ...] = DEFAULT  # what the method's ``tools`` names
    tool_docs: bool = True
    max_tool_rounds: int = 10
    reply_cap: int = 10_000
    parallel_tool_calls: bool = True
    max_tokens: int | None = None  # None: 512, or a peer's prompt's own (none sent)
    # Multiple-choice questions (by id), as the method's ``choices`` variant shows them.
    presentations: dict = field(default_factory=dict, compare=False)

    SETTINGS = ("tool_docs", "max_tool_rounds", "reply_cap", "parallel_tool_calls", "max_tokens")

    @classmethod
    def from_spec(
        cls, spec: dict, snapshot: Snapshot | None, presentations: dict | None = None
    ) -> FunctionCalling:
        settings = {k: spec[k] for k in cls.SETTINGS if k in spec}
        tools = spec["kind"] == "function-calling"
        cap = settings.get("reply_cap", cls.reply_cap)
        demos = demonstration_turns(snapshot, cap) if snapshot is not None and tools else ()
        names = tuple(spec.get("tools") or DEFAULT) if tools else ()
        return cls(demos, tools, names, presentations=presentations or {}, **settings)

    @property
    def offered(self) -> str:
        """What the system prompt says of the tools (NCBI's alone: the words as ever)."""
        if not self.tools:
            return "Answer from what you know. "
        names = set(self.toolsets)
        return (
            (WITH_TOOLS if "ncbi" in names else "")
            + (WITH_REST if names & {"ensembl", "uniprot"} else "")
            + (WITH_CODE if names & {"python", "bash"} else "")
        )

    @property
    def system(self) -> str:
        return TASK + self.offered + CONTRACT

    @property
    def header(self) -> str:
        """The turns every question starts with (logged once a shard, by their hash)."""
        opening = [{"role": "system", "content": self.system}, *self.demonstrations]
        return render_messages(opening)

    def schemas(self, functions) -> tuple[dict, ...] | None:
        return tuple(functions.schemas(self.tool_docs)) if self.tools else None

    def run(self, question_id: str, question: str, model, functions) -> QuestionResult:
        result = QuestionResult(question_id=question_id, header_sha256=sha256_text(self.header))
        if functions is not None and hasattr(functions, "begin"):
            functions.begin(question_id)  # (the code tools' scratch folder, empty)
        shown = self.presentations.get(question_id)
        read = final_answer
        if shown is None:
            messages = [
                {"role": "system", "content": self.system},
                *self.demonstrations,
                {"role": "user", "content": question},
            ]
        else:  # multiple choice: the variant's prompt, as the peer sends it alone
            messages = [{"role": "system", "content": TASK + self.offered}] if self.tools else []
            messages.append({"role": "user", "content": shown.prompt})
            question, read = shown.prompt, shown.letter_of
            result.presented = list(shown.presented) or None  # (an open answer: no order)
        logged = len(messages) - 1  # the question: what the first call adds to the header
        schemas = self.schemas(functions) if self.tools else None
        # A peer's prompt is sent with the generation parameters the peer sends (none,
        # for inspect_evals'); a max_tokens the method sets is sent all the same.
        unsent = shown.unsent if shown is not None else ()
        if self.max_tokens is not None:
            unsent = tuple(name for name in unsent if name != "max_tokens")
        for call_index in range(self.max_tool_rounds + 1):
            request = CompletionRequest(
                prompt=question,
                stop=(),
                max_tokens=self.max_tokens or DEFAULT_MAX_TOKENS,
                temperature=0.0,
                question_id=question_id,
                question=question,
                call_index=call_index,
                messages=tuple(messages),
                tools=schemas,
                parallel_tool_calls=None if self.parallel_tool_calls else False,
                unsent=unsent,
            )
            started = time.perf_counter()
            try:
                completion = model.complete(request)
            except (ContextLengthError, ModelMiss, ModelError) as exc:
                result.events.append(_model_event(request, messages[logged:], None, started, exc))
                kind = {ContextLengthError: "lengthError", ModelMiss: "model_miss"}
                return result.finish(answer=None, error=kind.get(type(exc), "model_error"))
            result.events.append(_model_event(request, messages[logged:], completion, started))
            logged = len(messages)
            calls = list(completion.tool_calls or []) if self.tools else []
            if not calls:
                return result.finish(answer=read(completion.text))
            if call_index == self.max_tool_rounds:  # still calling past the cap
                return result.finish(answer=None, error="numError")
            messages.append(_assistant_turn(completion.text, calls))
            for order, call in enumerate(calls):
                started = time.perf_counter()
                if order and not self.parallel_tool_calls:
                    done = functions.refuse(call["name"], call["arguments"], "one call a turn")
                else:
                    done = functions.call(call["name"], call["arguments"], question_id, call_index)
                data = {**done.describe(), "call_id": call["id"]}
                result.events += getattr(done, "events", [])  # (what a code call requested)
                result.events.append(Event("tool", call_index, data, time.perf_counter() - started))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": done.text})
        return result.finish(answer=None, error="numError")  # not reached


def final_answer(text: str) -> str:
    """The reply from its last line that starts with ``Answer:`` (the contract; the
    lines after it belong to the answer: a definition may run over several), else the
    reply as it is."""
    lines = [line.strip() for line in (text or "").strip().splitlines()]
    starts = [i for i, line in enumerate(lines) if line.lower().startswith("answer:")]
    return "\n".join(lines[starts[-1] :]) if starts else (text or "").strip()


def demonstration_turns(snapshot: Snapshot, cap: int | None = None) -> tuple[dict, ...]:
    """GeneGPT's four demonstrations as chat turns: the question, one function call a
    turn (the call that sends the demonstration's URL), the snapshot's reply to it as
    the tool message (a BLAST search shows its results), then the answer."""
    turns: list[dict] = []
    for d, demo in enumerate(DEMONSTRATIONS):
        turns.append({"role": "user", "content": demo.question})
        urls = demonstration_urls(demo, snapshot)
        for u, url in enumerate(urls):
            call = call_of_url(url)
            if call is None:  # BLAST's Get: the blast call's own result
                continue
            name, arguments = call
            call_id = f"demo{d + 1}-{u}"
            turns.append(
                _assistant_turn("", [{"id": call_id, "name": name, "arguments": arguments}])
            )
            shown = urls[u + 1] if name == "blast" else url  # the results, not the RID
            content = reply_text(snapshot.reply(shown).value(), cap)
            turns.append({"role": "tool", "tool_call_id": call_id, "content": content})
        turns.append({"role": "assistant", "content": f"Answer: {demo.answer}"})
    return tuple(turns)


def _assistant_turn(text: str, calls: list[dict]) -> dict:
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"]
                    if isinstance(c["arguments"], str)
                    else json.dumps(c["arguments"]),
                },
            }
            for c in calls
        ],
    }


def render_messages(messages: list[dict]) -> str:
    """Chat turns as a transcript shows them: role, text, and any function calls."""
    lines = []
    for m in messages:
        text = m.get("content") or ""
        for call in m.get("tool_calls") or []:
            function = call["function"]
            text += f"\n-> {function['name']}({function['arguments']})"
        lines.append(f"[{m['role']}] {text.strip()}")
    return "\n".join(lines) + "\n"


def _model_event(request, added, completion, started, error=None) -> Event:
    prompt = {
        "prompt_chars": sum(len(m.get("content") or "") for m in request.messages),
        "prompt_increment": render_messages(added),
        "continues_previous": request.call_index > 0,
    }
    tool_calls = list(completion.tool_calls or []) if completion else None
    return model_event(request, prompt, completion, started, error, tool_calls=tool_calls)


def prepare(context) -> Prepared:
    """A function-calling or no-tools task: the demonstrations' snapshot (function
    calling with demonstrations), the model, and NCBI's functions through the run's
    tool executor (none for no-tools)."""
    task, spec = context.task, context.run["method_spec"]
    snapshot = Snapshot.load(Path(task["snapshot"])) if task.get("snapshot") else None
    method = FunctionCalling.from_spec(spec, snapshot, presentations(context))
    functions = toolset(spec, context.tools_mode, method.reply_cap) if method.tools else None
    info = {"prompt_version": PROMPT_VERSION}
    return Prepared(method, context.model, functions, snapshot.id if snapshot else None, info)
