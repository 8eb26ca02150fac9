"""The question table every benchmark's questions go into (:mod:`helixbench.benchmarks`
says which), and the shapes of upstream file they are read from.

Each question has a stable id ``<benchmark>.<task slug>.<index>`` (its position in
its task in the pinned upstream file), the upstream task name as its label
(misspellings kept: "Human genome DNA aligment"), a slug for file names and
wildcards, its text and gold, and, for a multiple-choice question, its ``choices``
in the benchmark's own order (the right one first). Items shared with GeneTuring
(2023) or GeneHop carry the id of their counterpart
(:mod:`helixbench.datasets.overlap`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from .jsonfiles import read_json, read_jsonl, read_text


@lru_cache(maxsize=4096)  # (a sweep's plan asks for each task's slug once a run)
def slugify(label: str) -> str:
    """``"Human genome DNA aligment"`` -> ``"human-genome-dna-aligment"``."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def gold_text(gold: str | list[str]) -> str:
    """The gold answer as one line of text: a list of accepted answers joined by ", "."""
    return gold if isinstance(gold, str) else ", ".join(map(str, gold))


# What a question needs that only the system that answered it had (LABBench2's
# attachments, figures and tables, on its hub): asked only by imported runs.
NEEDS_FILES = "the hub's files"


@dataclass(frozen=True)
class Question:
    id: str
    benchmark: str
    task: str  # upstream task name (label)
    task_slug: str
    index: int  # position within the task in the upstream file
    text: str
    gold: str | list[str]
    demo: str | None = None  # "Dm.1".."Dm.4" when the item is a GeneGPT demonstration
    source_id: str | None = None  # a gene set's id (GO:0032385); BioASQ's, LAB-Bench's id
    # The GeneTuring (2023) or GeneHop question this one repeats, and how
    # (helixbench.datasets.overlap): "verbatim", "instruction dropped" or "rephrased".
    overlap_id: str | None = None
    overlap: str | None = None
    # A multiple-choice question's choices, the benchmark's order (the right one first).
    choices: list[str] | None = None
    # LABBench2's: the question's type (``gc_content``, ``gibson``), and what asking it
    # needs beside its text (benchmarks.labbench2.NEEDS; "the hub's files": not askable).
    subtype: str | None = None
    needs: str | None = None
    # The order its source showed the choices in, as indices into ``choices`` letter by
    # letter (BixBench's published order); None: a method's variant draws one.
    shown: list[int] | None = None

    @property
    def askable(self) -> bool:
        """Whether any model and method can ask it: all it needs is its text and the
        tools (not the files of a hub that is not pinned: :data:`NEEDS_FILES`)."""
        return self.needs != NEEDS_FILES

    @classmethod
    def at(cls, benchmark: str, task: str, index: int, text: str, gold, **fields) -> Question:
        """The question at ``index`` of ``task``, with its stable id and slug."""
        slug = slugify(task)
        return cls(
            f"{benchmark}.{slug}.{index:03d}", benchmark, task, slug, index, text, gold, **fields
        )

    @property
    def gold_text(self) -> str:
        return gold_text(self.gold)

    @property
    def genes(self) -> list[str]:
        """A gene set's genes (``genesets`` questions)."""
        return self.text.split()


def load_task_dict(benchmark: str, path: Path, demos: dict | None = None) -> list[Question]:
    """Questions of a file shaped ``{task: {question: gold}}`` (GeneGPT's data), in
    file order; ``demos``: the label of an item by (task, text)."""
    questions = []
    for task, items in read_json(path).items():
        for index, (text, gold) in enumerate(items.items()):
            demo = (demos or {}).get((task, text))
            questions.append(Question.at(benchmark, task, index, text, gold, demo=demo))
    return questions


def csv_rows(path: Path) -> list[dict]:
    """A CSV file's rows (a byte-order mark dropped; the unnamed empty column of a
    trailing comma left out)."""
    text = read_text(path).lstrip("\ufeff")
    rows = csv.DictReader(io.StringIO(text))
    return [{k: v for k, v in row.items() if k} for row in rows]


def table_questions(benchmark: str, rows: list[tuple[str, str, str, str | None]]):
    """Questions from (task, text, gold, source id) rows, indexed within each task in
    row order; text and gold lose their outer whitespace (line breaks inside a gold
    are kept), and a row without a question is left out."""
    questions, counts = [], {}
    for task, text, gold, source_id in rows:
        if not text.strip():
            continue
        index = counts[task] = counts.get(task, -1) + 1
        questions.append(
            Question.at(benchmark, task, index, text.strip(), gold.strip(), source_id=source_id)
        )
    return questions


def write_questions(questions: Iterable[Question], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        for q in questions:
            row = asdict(q)
            for optional in ("choices", "subtype", "needs", "shown"):  # (unset: as before)
                if row[optional] is None:
                    del row[optional]
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_questions(path: Path) -> list[Question]:
    return [Question(**row) for row in read_jsonl(path)]
