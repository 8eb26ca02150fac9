"""GeneTuring and GeneHop as one question table.

Each question has a stable id ``<benchmark>.<task slug>.<index>`` (its position in
the pinned upstream file), the upstream task name as its label (misspellings
kept: "Human genome DNA aligment"), and a slug for file names and wildcards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from .upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup

# Upstream data files, by benchmark.
BENCHMARK_FILES = {
    "geneturing": lookup(GENEGPT_REPO, "data/geneturing.json", GENEGPT_COMMIT),
    "genehop": lookup(GENEGPT_REPO, "data/genehop.json", GENEGPT_COMMIT),
}

# GeneTuring's tasks grouped by the paper's modules (Table 2 order).
GENETURING_MODULES = {
    "Nomenclature": ["Gene alias", "Gene name conversion"],
    "Genomic location": ["Gene SNP association", "Gene location", "SNP location"],
    "Functional analysis": ["Gene disease association", "Protein-coding genes"],
    "Sequence alignment": ["Human genome DNA aligment", "Multi-species DNA aligment"],
}
GENEHOP_TASKS = ["SNP gene function", "Disease gene location", "sequence gene alias"]

# The GeneGPT demonstrations are scored test items (reference.md section 2):
# the demo label for the question text each one reuses.
DEMONSTRATION_ITEMS = {
    ("Gene alias", "What is the official gene symbol of LMP10?"): "Dm.1",
    ("Gene SNP association", "Which gene is SNP rs1217074595 associated with?"): "Dm.2",
    ("Gene disease association", "What are genes related to Meesmann corneal dystrophy?"): "Dm.3",
    (
        "Human genome DNA aligment",
        "Align the DNA sequence to the human genome:ATTCTGCCTTTAGTAATTTGATGACAGAGACTTCTTGGGAA"
        "CCACAGCCAGGGAGCCACCCTTTACTCCACCAACAGGTGGCTTATATCCAATCTGAGAAAGAAAGAAAAAAAAAAAAGTATTTCTCT",
    ): "Dm.4",
}


def slugify(label: str) -> str:
    """``"Human genome DNA aligment"`` -> ``"human-genome-dna-aligment"``."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def module_of(task: str) -> str | None:
    """The paper's module for a GeneTuring task, else None."""
    return next((m for m, tasks in GENETURING_MODULES.items() if task in tasks), None)


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


def load_benchmark(benchmark: str, path: Path) -> list[Question]:
    """Questions of one upstream data file (``{task: {question: gold}}``), in file order."""
    data = json.loads(Path(path).read_text())
    questions = []
    for task, items in data.items():
        slug = slugify(task)
        for index, (text, gold) in enumerate(items.items()):
            questions.append(
                Question(
                    id=f"{benchmark}.{slug}.{index:03d}",
                    benchmark=benchmark,
                    task=task,
                    task_slug=slug,
                    index=index,
                    text=text,
                    gold=gold,
                    demo=DEMONSTRATION_ITEMS.get((task, text)),
                )
            )
    return questions


def write_questions(questions: Iterable[Question], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        for q in questions:
            fh.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_questions(path: Path) -> list[Question]:
    with open(path) as fh:
        return [Question(**json.loads(line)) for line in fh if line.strip()]


def tasks_of(benchmark: str) -> list[str]:
    """Upstream task names of a benchmark, in report order."""
    if benchmark == "geneturing":
        return [t for tasks in GENETURING_MODULES.values() for t in tasks]
    if benchmark == "genehop":
        return list(GENEHOP_TASKS)
    raise KeyError(f"unknown benchmark {benchmark!r}; known: geneturing, genehop")


def task_by_slug(benchmark: str, slug: str) -> str:
    for task in tasks_of(benchmark):
        if slugify(task) == slug:
            return task
    raise KeyError(f"benchmark {benchmark!r} has no task with slug {slug!r}")
