"""LABBench2's answers scored three ways, side by side (docs/benchmarks.md, "LABBench2").

- ``lb2_published``: LABBench2's own verdict as its report publishes it (its
  HybridEvaluator: the validators for ``seqqa2``, a judge for the rest), 1 where its
  value is 1.0; a question the harness failed counts 0, as its accuracy counts it, and
  so does one its reports do not hold (a miss, as the imports' caption says).
- ``lb2_value``: helixbench's deterministic verdict, only where an answer has one
  right value: a ``seqqa2`` number within the tolerance LABBench2's validator allows
  by default (:data:`TOLERANCES`), a count, a list of fragment lengths, a set of
  enzymes or primers, an amino acid; a bare number elsewhere within 1e-6 (the exact-
  match judge's rule) when the answer states one number; a ``dbqa2`` sequence found in
  the answer. No verdict where many answers are right (primer design) or where no
  rule can tell (free text).
- ``lb2_judge``: LABBench2's judge prompts, read from its pinned ``evals/prompts.py``,
  put to ``scoring.judge.model``; routed by tag as LABBench2 routes them (``dbqa2``:
  the recall judge; ``figqa2``/``tableqa2``/``suppqa2``: the exact-match judge; the
  rest: the semantic judge, which also grades ``seqqa2`` and ``cloning`` here, where
  LABBench2 runs validators that need its hub's files). A verdict of ``unsure`` or a
  reply with none is no score (counted apart, never as wrong).
- ``labbench2`` (primary): the published verdict where the record has one, else the
  deterministic one, else the judge's.

Each returns ``(score, reason)``: the reasons go to the score lines, so that every
disagreement is listed with both.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from .answer_numbers import MINUS, stated_numbers
from .prompt_judge import PromptJudge
from .verdicts import read_verdict

log = logging.getLogger("helixbench.labbench2")

# seqqa2 types with one right value -> (tolerance, relative), the default of the
# type's validator (src/labbench2/seqqa2/validate_<type>.py, checked by the tests).
TOLERANCES = {
    "gc_content": (0.01, False),
    "molecular_weight": (0.01, True),
    "enzyme_kinetics": (0.15, True),
    "msa_scoring": (0.01, False),
    "pairwise_distances": (0.05, True),  # absolute for a Hamming distance
    "protein_hydrophobicity": (0.05, True),
    "sequence_complexity": (0.1, True),
    "tm_calculations": (0.2, False),
}
EXACT_TYPES = ("restriction_counts", "restriction_digest", "mutation_restriction")
EXACT_TYPES += ("primer_interactions", "mutation_synonymous", "orf_amino_acid")
EXACT_MATCH = 1e-6  # LABBench2's exact-match judge: absolute or relative difference
ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
NUMBER = re.compile(r"-?\d+\.?\d*")
UNITS = re.compile(r"\s*(bp|nt|aa|kDa|Da|°C|kcal/mol)$", re.IGNORECASE)
SEQUENCE = re.compile(r"^[ACGTUN]{20,}$|^[ACDEFGHIKLMNPQRSTVWY]{30,}$")
AMINO = {
    "ala": "A", "arg": "R", "asn": "N", "asp": "D", "cys": "C", "gln": "Q", "glu": "E",
    "gly": "G", "his": "H", "ile": "I", "leu": "L", "lys": "K", "met": "M", "phe": "F",
    "pro": "P", "ser": "S", "thr": "T", "trp": "W", "tyr": "Y", "val": "V",
    "alanine": "A", "arginine": "R", "asparagine": "N", "aspartate": "D",
    "aspartic acid": "D", "cysteine": "C", "glutamine": "Q", "glutamate": "E",
    "glutamic acid": "E", "glycine": "G", "histidine": "H", "isoleucine": "I",
    "leucine": "L", "lysine": "K", "methionine": "M", "phenylalanine": "F",
    "proline": "P", "serine": "S", "threonine": "T", "tryptophan": "W", "tyrosine": "Y",
    "valine": "V", "stop": "*",
}  # fmt: skip
# Not in the source's reports: a miss by its published verdict, no verdict of ours.
NOT_THEIRS = ("missing_in_source",)


def tag_of(task: str) -> str:
    return task.split("/")[0]


def extracted(answer: str) -> str | None:
    """The answer inside the first ``<answer>`` tag (LABBench2's extraction), or None."""
    found = ANSWER_TAG.search(answer)
    return found.group(1) if found else None


def number(text: str) -> float | None:
    """A number as LABBench2's validators parse one: ``%`` and a unit dropped, the first
    number of what is left."""
    text = UNITS.sub("", text.replace("%", "").strip())
    text = MINUS.sub("-", text)  # (a Unicode minus is a minus: "−0.216" is -0.216)
    found = NUMBER.search(text.replace(",", ""))
    return float(found.group()) if found else None


def _close(expected: float, given: float, tolerance: float, relative: bool) -> bool:
    if relative and expected != 0:
        return abs(expected - given) / abs(expected) <= tolerance
    return abs(expected - given) <= tolerance


def _amino(label: str) -> str:
    label = label.strip().rstrip(".").lower()
    return AMINO.get(label, label.upper())


def _names(text: str) -> set[str]:
    text = text.strip()
    return set() if text.lower() in ("", "none") else {n.strip().lower() for n in text.split(",")}


def seqqa2_value(kind: str, text: str, gold: str, question: str) -> tuple[float, str] | None:
    """A seqqa2 answer's verdict where its type has one right value (None: a design)."""
    if kind not in TOLERANCES and kind not in EXACT_TYPES:
        return None
    given = extracted(text)
    if given is None:
        return 0.0, "no <answer> tag (LABBench2 fails the extraction too)"
    if kind in TOLERANCES:
        expected, value = number(gold), number(given)
        if expected is None:  # ("undefined")
            same = given.strip().lower() == gold.strip().lower()
            return float(same), f"{given!r} {'is' if same else 'is not'} {gold!r}"
        if value is None:
            return 0.0, f"{given!r} is no number"
        tolerance, relative = TOLERANCES[kind]
        if kind == "pairwise_distances" and "hamming" in question.lower():
            relative = False
        ok = _close(expected, value, tolerance, relative)
        within = f"{tolerance:g}{' relative' if relative else ''}"
        return float(ok), f"{value:g} vs {expected:g}: {'within' if ok else 'beyond'} {within}"
    if kind == "restriction_counts":
        value, expected = number(given), number(gold)
        ok = value is not None and value == expected
        return float(ok), f"{given!r} vs {gold!r}: {'equal' if ok else 'not equal'}"
    if kind == "restriction_digest":
        return _digest_verdict(given, gold)
    if kind in ("mutation_restriction", "primer_interactions"):
        ok = _names(given) == _names(gold)
        said = "the same" if ok else "not the same"
        return float(ok), f"{sorted(_names(given))} vs {sorted(_names(gold))}: {said}"
    ours, theirs = _amino(given.split(",")[-1]), _amino(gold.split(",")[-1])
    return float(
        ours == theirs
    ), f"{ours!r} vs {theirs!r}: {'equal' if ours == theirs else 'not equal'}"


def _digest_verdict(given: str, gold: str) -> tuple[float, str]:
    """Fragment lengths as the validator compares them (sorted, each within 1), the
    reason saying which way it went and why."""
    try:
        ours = sorted(int(float(v)) for v in given.split(",") if v.strip())
        theirs = sorted(int(float(v)) for v in gold.split(",") if v.strip())
    except ValueError:
        return 0.0, f"{given!r} is no list of lengths"
    if len(ours) != len(theirs):
        return 0.0, f"{ours} vs {theirs}: {len(ours)} fragments, not {len(theirs)}"
    off = [(a, b) for a, b in zip(ours, theirs, strict=True) if abs(a - b) > 1]
    if off:
        a, b = off[0]
        more = f" (and {len(off) - 1} more)" if len(off) > 1 else ""
        return 0.0, (
            f"{ours} vs {theirs}: {a} is off by {abs(a - b)} from {b}{more}; the validator allows 1"
        )
    return 1.0, f"{ours} vs {theirs}: each within 1, as the validator allows"


def value_verdict(question, answer: str | None) -> tuple[float, str] | None:
    """helixbench's deterministic verdict (module docstring), or None."""
    tag, gold = tag_of(question.task), question.gold
    if not isinstance(gold, str) or not gold or tag == "cloning":
        return None
    if tag == "seqqa2":
        return seqqa2_value(question.subtype or "", answer or "", gold, question.text)
    if tag == "dbqa2":
        try:
            leaves = json.loads(gold)
        except ValueError:
            return None
        if not isinstance(leaves, dict) or len(leaves) != 1:
            return None
        sequence = str(next(iter(leaves.values()))).upper()
        if not SEQUENCE.match(sequence):
            return None
        found = sequence in re.sub(r"\s+", "", (answer or "").upper())
        where = "is" if found else "is not"
        return float(found), f"the {len(sequence)}-letter sequence {where} in it"
    expected = number(gold) if re.fullmatch(r"\s*-?[\d,]*\.?\d+\s*%?\s*", gold) else None
    if expected is None:
        return None
    text = extracted(answer or "") or (answer or "")
    numbers = set(stated_numbers(text))  # (answer_numbers: URLs, citations, ids left out)
    if not answer:
        return 0.0, "no answer"
    if len(numbers) != 1:
        return None  # (no number, or several: no rule tells which one it gives)
    (value,) = numbers
    ok = abs(value - expected) <= EXACT_MATCH or _close(expected, value, EXACT_MATCH, True)
    said = "equal within 1e-6" if ok else "not equal within 1e-6"
    return float(ok), f"{value:g} vs {expected:g}: {said}"


class LabBench2Value:
    per_record = True

    def score_record(self, question, record: dict):
        if record.get("error") in NOT_THEIRS:
            return None
        return value_verdict(question, record.get("answer"))


class LabBench2Published:
    per_record = True

    def score_record(self, question, record: dict):
        if record.get("error") == "failed_in_source":
            return 0.0, "LABBench2's run failed on it (its accuracy counts it wrong)"
        if record.get("error") in NOT_THEIRS:  # (the report's caption: scored as misses)
            return 0.0, "not in the source's reports: scored as a miss"
        published = record.get("published")
        if not published:
            return None
        return float(published["value"] == 1.0), str(published.get("reason") or "")


def judge_prompts(path: Path) -> dict[str, str]:
    """LABBench2's judge prompts (``evals/prompts.py``), read as data: the string
    constants of the module, never run."""
    from ..datasets.upstream import python_constants

    return python_constants(Path(path).read_text(encoding="utf-8"))


def prompt_name(tag: str) -> str:
    """Which of LABBench2's prompts grades a tag (its HybridEvaluator's routing)."""
    if tag == "dbqa2":
        return "STRUCTURED_EVALUATION_PROMPT_DATA_ACCESS_BENCH_RECALL"
    if tag.startswith(("figqa2", "tableqa2", "suppqa2")):
        return "STRUCTURED_EVALUATION_PROMPT_EXACT_MATCH"
    return "STRUCTURED_EVALUATION_PROMPT"


# The structured reply LABBench2's judge gives (pydantic-ai's output tool).
RESULT_TOOL = {
    "type": "function",
    "function": {
        "name": "final_result",
        "description": "The evaluation's result.",
        "parameters": {
            "type": "object",
            "properties": {"rationale": {"type": "string"}, "result": {"type": "string"}},
            "required": ["rationale", "result"],
        },
    },
}


def parse_verdict(text: str, tool_calls, answer: str | None = None) -> tuple[str, str]:
    """(verdict, rationale) of a judge's reply: its tool call's arguments, a JSON object
    it wrote, or the verdict its text states (:func:`.verdicts.read_verdict`: the graded
    answer's words never read as the judge's; negated, contradicted or missing:
    undecided)."""
    return read_verdict(text, tool_calls, answer)


class LabBench2Judge(PromptJudge):
    """LABBench2's judge prompts, routed by tag, offered its ``final_result`` tool."""

    scorer = "lb2_judge"
    tools = (RESULT_TOOL,)

    def score_record(self, question, record: dict):
        if self.model is None or record.get("error") in NOT_THEIRS:
            return None
        answer = record.get("answer")
        if not answer or not answer.strip():
            if self.only is not None:  # (calibrating: the judge is measured on what it saw)
                return None
            return 0.0, "No output provided"  # (LABBench2's judge asks nothing either)
        return self.judge(question, answer)

    def prompt(self, question, answer: str) -> tuple[str, str]:
        name = prompt_name(tag_of(question.task))
        template = self.prompts[name]
        text = template.format(
            question=question.text,
            correct_answer=question.gold,
            answer=self.shown(answer, template),
        )
        return name, text

    def verdict(self, text: str, tool_calls, answer: str) -> tuple[str, str]:
        return parse_verdict(text, tool_calls, answer)
