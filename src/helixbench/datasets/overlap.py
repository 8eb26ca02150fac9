"""Which questions of the newer benchmarks repeat GeneTuring (2023) or GeneHop items.

Three rules, each from the files themselves, tried for every question of the
benchmarks of the question bank (GeneTuring 2025, BioRAGent, LAB-Bench: those a
benchmark module marks ``in_bank``):

- **verbatim**: the question's text equals a GeneTuring or GeneHop question's once
  runs of whitespace are collapsed (BioRAGent's five single-hop copies of GeneTuring
  tasks).
- **instruction dropped**: it equals a GeneHop question without GeneHop's closing
  instruction ("Let's decompose the question to sub-questions and solve them step
  by step."; BioRAGent's two multi-hop copies).
- **rephrased**: a GeneTuring 2025 question whose entity is a GeneTuring question's
  entity in the task of the same name. A question's entity is what remains of it
  once the words of its task's templates are dropped: the words found in at least
  half of the task's questions, in either benchmark (``LMP10`` of "What is the
  official gene symbol of LMP10?" and of "The official gene symbol of gene LMP10
  is"). Only a one-to-one match counts; the rest are new items.

A repeated item keeps its own gold: where the golds differ, the report lists both
(:func:`helixbench.report.tables.question_bank.gold_differences`). Verbatim and
instruction-dropped items are the same question posed again, so a run that covers
both benchmarks asks it once.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace

VERBATIM, INSTRUCTION_DROPPED, REPHRASED = "verbatim", "instruction dropped", "rephrased"
# Items of these kinds are asked once when a run covers both benchmarks.
ASKED_ONCE = frozenset({VERBATIM, INSTRUCTION_DROPPED})
ORIGINALS = ("geneturing", "genehop")
GENEHOP_INSTRUCTION = re.compile(r"\s*Let's decompose the question\b.*$", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.'/()+]*")
TEMPLATE_SHARE = 0.5


def collapse(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return [w.rstrip(".?") for w in _WORD.findall(text)]


def _template_words(texts: list[str]) -> set[str]:
    counts = Counter(w for text in texts for w in set(_words(text)))
    return {w for w, n in counts.items() if n >= TEMPLATE_SHARE * len(texts)}


def link_overlaps(questions: list, newer) -> list:
    """The question table with ``overlap_id`` and ``overlap`` set on every question of
    the ``newer`` benchmarks that repeats an older item (by the rules above)."""
    originals = [q for q in questions if q.benchmark in ORIGINALS]
    by_text: dict[str, tuple[str, str]] = {}
    for q in originals:
        by_text.setdefault(collapse(q.text), (q.id, VERBATIM))
        if q.benchmark == "genehop":
            by_text.setdefault(
                collapse(GENEHOP_INSTRUCTION.sub("", q.text)), (q.id, INSTRUCTION_DROPPED)
            )
    rephrased = _rephrased(questions)
    linked = []
    for q in questions:
        if q.benchmark in newer:
            found = by_text.get(collapse(q.text)) or rephrased.get(q.id)
            if found:
                q = replace(q, overlap_id=found[0], overlap=found[1])
        linked.append(q)
    return linked


def _rephrased(questions: list) -> dict[str, tuple[str, str]]:
    """GeneTuring 2025 question id -> (GeneTuring id, "rephrased"), by entity."""
    by_task: dict[tuple[str, str], list] = defaultdict(list)
    for q in questions:
        by_task[q.benchmark, q.task].append(q)
    found = {}
    for (benchmark, task), newer in by_task.items():
        older = by_task.get(("geneturing", task))
        if benchmark != "geneturing2025" or not older:
            continue
        template = _template_words([q.text for q in older]) | _template_words(
            [q.text for q in newer]
        )

        def entity(q, template=template):
            return tuple(w for w in _words(q.text) if w not in template)

        candidates: dict[tuple, list] = defaultdict(list)
        for q in newer:
            candidates[entity(q)].append(q)
        older_by_entity = Counter(entity(q) for q in older)
        for q in older:
            matches = candidates.get(entity(q), [])
            if len(matches) == 1 and older_by_entity[entity(q)] == 1 and entity(q):
                found[matches[0].id] = (q.id, REPHRASED)
    return found
