"""Naming gene sets (GeneAgent's task): three methods, one record per set.

- ``closed-book``: the model names the set's most prominent process from the genes
  alone, with a fixed prompt (after Hu et al.'s, which GeneAgent uses) that asks for
  the name as a ``Process: <name>`` line; the first such line is parsed (a reply
  without one is recorded as ``parse_error`` and scores 0). SmolLM2-135M writes the
  line for 4 of the 6 toy sets with this wording, for none when asked to put it first.
- ``geneagent``: GeneAgent's cascade (paper, Methods): generation; claims about the
  name; verification of each claim with tools; modification; claims about the
  narrative; verification; summarisation. A claim's verification first asks the
  gene-set tools about the claim's genes (enrichment, pathways, interactions; masked
  for the set's dataset), then lets the model call any offered tool for up to
  ``max_tool_rounds`` rounds: through the API's function calling where the backend
  has it (chat servers), else through a text protocol (``CALL <tool> <JSON>``, the
  result given back after ``RESULT:``). The verdict (supported, partially supported,
  refuted, or unknown when the report states none) is read from the model's report.
  A generation without a ``Process:`` line gets one follow-up call that continues it
  after ``Process:``; only if that names nothing is the set a ``parse_error``.
- ``gsea-top1``: classic enrichment analysis, no language model: the top term as the
  name: GeneAgent's recorded g:Profiler terms where they exist (MSigDB), else a live
  g:Profiler query through the tool executor.

Every model call, tool call and claim is an event of the record, for the
per-question view and the verification statistics.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..benchmarks.genesets import DATASET as GENESET_DATASET
from ..datasets.jsonfiles import read_json
from ..models import (
    Model,
)
from ..tools import tool_settings
from ..tools.executor import ToolExecutor
from ..tools.functions import ToolCall
from ..tools.genesets import EVIDENCE_TOOLS, GeneSetTools, geneset_settings
from ..transcripts import Event, QuestionResult
from . import Prepared
from .session import Session, Stopped, parse_verdict

SYSTEM = "You are an efficient and insightful assistant to a molecular biologist."
GENERATE = """{system}
Write a short critical analysis of the biological processes performed by this system \
of interacting proteins, and propose a brief name for its most prominent process.
Be concise, specific and factual; for each function you name, give its genes.
End your reply with one line of the form "Process: <name>".

Genes: {genes}
"""
CLAIMS = """You are a careful fact-checker of gene-set analyses.
Here is {what} for the gene set {genes}:
{text}
It may be wrong. Write up to {n} short, self-contained claims {about} that can be \
checked against gene databases. Each claim names the genes it is about and their \
shared function. Reply with a JSON list of strings only.
"""
CLAIMS_ABOUT = {
    "name": ("the proposed process name", "that the genes of the set perform this process"),
    "narrative": (
        "the analysis",
        "about groups of genes and the functions the analysis gives them",
    ),
}
VERIFY = """You are a helpful fact-checker. Verify the claim with the evidence and tools.
Claim: {claim}
Evidence from gene databases:
{evidence}
"""
VERIFY_FINISH = """When you have finished, reply with "Report:", your findings and evidence, \
and one verdict: supported, partially supported or refuted."""
TEXT_PROTOCOL = """To call a tool, write one line "CALL <tool> <JSON arguments>" and stop; \
its result follows after "RESULT:". Tools:
{tools}
"""
MODIFY = """{system}
Genes: {genes}
Your analysis:
{narrative}
Process: {name}

Verification report of claims about the process name:
{reports}
If every claim is supported, keep the name and the analysis. Otherwise replace the \
name by the most significant function the report supports (be concise) and revise the \
analysis around it.
End your reply with one line of the form "Process: <name>".
"""
SUMMARISE = """{system}
Genes: {genes}
Your analysis:
{narrative}
Process: {name}

Verification report of claims about the analysis:
{reports}
Revise the analysis by the report, leaving out what it did not support. Keep the name \
unless none of its claims is supported; then propose a new brief name for the function \
the genes jointly perform according to the report.
End your reply with one line of the form "Process: <name>".
"""

PROCESS_LINE = re.compile(r"^[\s*#>_-]*process\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
CALL_LINE = re.compile(r"^\s*CALL\s+(\w+)\s*(\{.*\})?\s*$", re.MULTILINE)
VERDICTS = ("supported", "partially supported", "refuted", "unknown")


def parse_process(text: str) -> str | None:
    """The name in a reply's first ``Process: <name>`` line (markdown stripped)."""
    names = [m.group(1).strip(" *_`\"'.") for m in PROCESS_LINE.finditer(text or "")]
    names = [n for n in names if n and n != "<name>"]
    return names[0] if names else None


def parse_claims(text: str, limit: int) -> list[str]:
    """Claims from a reply: a JSON list of strings, else its bulleted or numbered lines."""
    start, end = (text or "").find("["), (text or "").rfind("]")
    if 0 <= start < end:
        try:
            items = json.loads(text[start : end + 1])
            claims = [str(c).strip() for c in items if isinstance(c, str | int | float)]
            return [c for c in claims if c][:limit]
        except ValueError:
            pass
    lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip() for line in text.splitlines()]
    return [line for line in lines if len(line.split()) >= 3][:limit]


@dataclass(frozen=True)
class ClosedBook:
    max_tokens: int = 400

    @classmethod
    def from_spec(cls, spec: dict) -> ClosedBook:
        return cls(**{k: spec[k] for k in ("max_tokens",) if k in spec})

    def run(self, question_id: str, question: str, model: Model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        session = Session(question_id, question, model, result)
        prompt = GENERATE.format(system=SYSTEM, genes=", ".join(question.split()))
        try:
            reply = session.ask(prompt, self.max_tokens).text
        except Stopped as stop:
            return result.finish(answer=None, error=stop.error)
        name = parse_process(reply)
        return result.finish(answer=name, error=None if name else "parse_error")


@dataclass(frozen=True)
class GseaTop1:
    """The top enrichment term; ``recorded``: question text -> recorded top term."""

    recorded: dict

    def run(self, question_id: str, question: str, model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        if question in self.recorded:
            term = self.recorded[question]
            call = ToolCall("recorded g:Profiler top-1 term (GeneAgent)", {}, term)
            result.events.append(Event("tool", 0, {**call.describe(), "cache": "recorded"}))
            return result.finish(answer=term)
        session = Session(question_id, question, model, result)
        genes = ",".join(question.split())
        call = session.tool(tools, "get_enrichment_for_gene_set", {"genes": genes})
        if call.error:
            return result.finish(answer=None, error="tool_error")
        top = call.text.splitlines()[0] if call.text else ""
        if top.startswith("No significant"):
            return result.finish(answer=None, error="no_term")
        return result.finish(answer=re.sub(r"\s*\([^()]*\)$", "", top))


@dataclass(frozen=True)
class GeneAgent:
    max_claims: int = 5
    max_tool_rounds: int = 3
    max_tokens: int = 512

    @classmethod
    def from_spec(cls, spec: dict) -> GeneAgent:
        keys = ("max_claims", "max_tool_rounds", "max_tokens")
        return cls(**{k: spec[k] for k in keys if k in spec})

    def run(self, question_id: str, question: str, model: Model, tools) -> QuestionResult:
        result = QuestionResult(question_id=question_id)
        session = Session(question_id, question, model, result)
        genes = question.split()
        listed = ", ".join(genes)
        try:
            prompt = GENERATE.format(system=SYSTEM, genes=listed)
            reply = session.ask(prompt, self.max_tokens).text
            name = parse_process(reply) or self._ask_name(session, prompt, reply)
            if name is None:
                return result.finish(answer=None, error="parse_error")
            narrative = reply
            reports = self._verify_all(session, tools, genes, "name", name)
            prompt = MODIFY.format(
                system=SYSTEM, genes=listed, narrative=narrative, name=name, reports=reports
            )
            reply = session.ask(prompt, self.max_tokens).text
            name, narrative = parse_process(reply) or name, reply or narrative
            reports = self._verify_all(session, tools, genes, "narrative", narrative)
            prompt = SUMMARISE.format(
                system=SYSTEM, genes=listed, narrative=narrative, name=name, reports=reports
            )
            reply = session.ask(prompt, self.max_tokens).text
            return result.finish(answer=parse_process(reply) or name)
        except Stopped as stop:
            return result.finish(answer=None, error=stop.error)

    def _ask_name(self, session, prompt: str, reply: str) -> str | None:
        """A reply without a ``Process:`` line gets one follow-up call that continues
        it after ``Process:`` (its first line is the name), so the cascade can go on."""
        follow = session.ask(prompt + reply.rstrip() + "\nProcess:", 32, stop=("\n",)).text
        return parse_process("Process:" + follow)

    def _verify_all(self, session, tools, genes, stage: str, text: str) -> str:
        what, about = CLAIMS_ABOUT[stage]
        prompt = CLAIMS.format(
            what=what, genes=", ".join(genes), text=text, n=self.max_claims, about=about
        )
        claims = parse_claims(session.ask(prompt, self.max_tokens).text, self.max_claims)
        lines = []
        for claim in claims:
            report, verdict = self._verify(session, tools, genes, claim)
            data = {"stage": stage, "claim": claim, "verdict": verdict, "report": report}
            session.result.events.append(Event("claim", session.calls, data))
            lines.append(f"Claim: {claim}\nVerdict: {verdict}\nReport: {report}")
        return "\n\n".join(lines) or "No claim could be made."

    def _verify(self, session, tools, genes, claim: str) -> tuple[str, str]:
        named = [g for g in genes if re.search(rf"(?<![\w-]){re.escape(g)}(?![\w-])", claim)]
        of_claim = ",".join(named or genes)
        evidence = []
        for name in tools.names:
            if name in EVIDENCE_TOOLS:
                call = session.tool(tools, name, {"genes": of_claim})
                evidence.append(f"{name}({of_claim}):\n{call.text}")
        prompt = VERIFY.format(claim=claim, evidence="\n\n".join(evidence) or "none")
        if getattr(session.model, "supports_tools", False):
            report = self._verify_by_function_calling(session, tools, prompt)
        else:
            report = self._verify_by_text(session, tools, prompt)
        return report, parse_verdict(report)

    def _verify_by_function_calling(self, session, tools, prompt: str) -> str:
        messages = [{"role": "user", "content": prompt + VERIFY_FINISH}]
        for _ in range(self.max_tool_rounds):
            reply = session.ask(prompt, self.max_tokens, messages=messages, tools=tools.schemas())
            if not reply.tool_calls:
                return _report(reply.text)
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in reply.tool_calls
                    ],
                }
            )
            for c in reply.tool_calls:
                try:
                    arguments = json.loads(c["arguments"] or "{}")
                except ValueError:
                    arguments = {}
                call = session.tool(tools, c["name"], arguments)
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": call.text})
        messages.append({"role": "user", "content": "No more tool calls. " + VERIFY_FINISH})
        # The tools stay declared (a conversation with tool calls needs them); a call
        # the model still makes is not run: its text is the report.
        final = session.ask(prompt, self.max_tokens, messages=messages, tools=tools.schemas())
        return _report(final.text)

    def _verify_by_text(self, session, tools, prompt: str) -> str:
        transcript = prompt + TEXT_PROTOCOL.format(tools=tools.describe_for_text())
        transcript += VERIFY_FINISH + "\n"
        for _ in range(self.max_tool_rounds):
            reply = session.ask(transcript, self.max_tokens, stop=("\nRESULT:",)).text
            match = CALL_LINE.search(reply)
            if match is None:
                return _report(reply)
            try:
                arguments = json.loads(match.group(2) or "{}")
            except ValueError:
                arguments = {}
            call = session.tool(tools, match.group(1), arguments)
            transcript += reply[: match.end()] + f"\nRESULT: {call.text}\n"
        transcript += "No more tool calls.\nReport:"
        return _report("Report:" + session.ask(transcript, self.max_tokens).text)


def _report(text: str | None) -> str:
    text = text or ""
    at = text.find("Report:")
    return (text[at + len("Report:") :] if at >= 0 else text).strip()


def prepare(context) -> Prepared:
    """A gene-set task: closed-book (no tools), geneagent (its tools masked for the
    set's dataset) or gsea-top1 (the recorded top terms where GeneAgent recorded them,
    live enrichment otherwise)."""
    kind, spec = context.kind, context.run["method_spec"]
    if kind == "closed-book":
        return Prepared(ClosedBook.from_spec(spec), context.model)
    executor = ToolExecutor(geneset_settings(tool_settings(context.tools_mode)))
    if kind == "geneagent":
        dataset = GENESET_DATASET[context.task["task"]]  # no tool of the set's own source
        if spec.get("prompts", "upstream") == "upstream":  # as main_cascade.py sends them
            from ..paths import UPSTREAM_DIR
            from .geneagent_upstream import UpstreamGeneAgent, read_prompts

            folder = Path(UPSTREAM_DIR) / Path(spec["upstream"][0]).parent
            method = UpstreamGeneAgent(read_prompts(folder), executor, dataset)
            return Prepared(method, context.model)
        return Prepared(GeneAgent.from_spec(spec), context.model, GeneSetTools(executor, dataset))
    terms = recorded_terms(context.task.get("gsea_terms"), context.questions, context.every)
    return Prepared(GseaTop1(terms or {}), context.model, GeneSetTools(executor, None))


def recorded_terms(path: str | None, questions, every) -> dict[str, str] | None:
    """Question text -> GeneAgent's recorded top enrichment term. The recorded list
    follows the MSigDB file's row order; a toy set finds its term by its set id."""
    if path is None:
        return None
    terms = read_json(path)
    msigdb = sorted((q for q in every if q.task == "MSigDB"), key=lambda q: q.index)
    by_id = {q.source_id: t["name"] for q, t in zip(msigdb, terms, strict=True)}
    return {q.text: by_id[q.source_id] for q in questions if q.source_id in by_id}
