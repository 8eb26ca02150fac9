"""GeneTuring, GeneHop and GeneAgent's gene sets as one question table.

Each question has a stable id ``<benchmark>.<task slug>.<index>`` (its position in
the pinned upstream file), the upstream task name as its label (misspellings
kept: "Human genome DNA aligment"), and a slug for file names and wildcards.

Benchmark ``genesets`` has one task per GeneAgent dataset (GO, NeST, MSigDB and
their 3-set toy samples): a question's text is its genes, space-separated, its
gold the curated name, its ``source_id`` the set's id (GO:0032385, NEST:256).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from .jsonfiles import read_json, read_jsonl, read_text
from .upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, GENEGPT_COMMIT, GENEGPT_REPO, lookup

# Upstream data files, by benchmark.
BENCHMARK_FILES = {
    "geneturing": lookup(GENEGPT_REPO, "data/geneturing.json", GENEGPT_COMMIT),
    "genehop": lookup(GENEGPT_REPO, "data/genehop.json", GENEGPT_COMMIT),
}


def _geneagent(path: str):
    return lookup(GENEAGENT_REPO, path, GENEAGENT_COMMIT)


# GeneAgent's datasets, one task each: (file, id column, name column, genes column).
GENESET_FILES = {
    "GO": (_geneagent("Datasets/Gene ontology/GO_terms.csv"), "GO", "Term_Description", "Genes"),
    "NeST": (_geneagent("Datasets/NeST/NeST.tsv"), "NEST ID", "name_new", "Genes"),
    "MSigDB": (_geneagent("Datasets/MsigDB/MsigDB.csv"), "ID", "Name", "Genes"),
    "GO toy": (_geneagent("Datasets/Gene ontology/GO_toy.csv"), "GO", "Term_Description", "Genes"),
    "NeST toy": (_geneagent("Datasets/NeST/NeST_toy.tsv"), "NEST ID", "name_new", "Genes"),
    "MSigDB toy": (_geneagent("Datasets/MsigDB/MsigDB_toy.csv"), "ID", "Name", "Genes"),
}
# The dataset each task's sets come from (a toy file samples its dataset).
GENESET_DATASET = {task: task.removesuffix(" toy") for task in GENESET_FILES}


def question_files() -> list:
    """Every upstream file the question table is built from."""
    return [*BENCHMARK_FILES.values(), *(f for f, *_ in GENESET_FILES.values())]


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
    source_id: str | None = None  # a gene set's id in its dataset (GO:0032385)

    @property
    def genes(self) -> list[str]:
        """A gene set's genes (``genesets`` questions)."""
        return self.text.split()


def load_benchmark(benchmark: str, path: Path) -> list[Question]:
    """Questions of one upstream data file (``{task: {question: gold}}``), in file order."""
    data = read_json(path)
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


def load_genesets(task: str, path: Path) -> list[Question]:
    """The gene sets of one GeneAgent dataset file, in file order. Genes are given
    space- or comma-separated upstream; we keep them space-separated."""
    _file, id_column, name_column, genes_column = GENESET_FILES[task]
    text = read_text(path)
    delimiter = "\t" if str(path).endswith(".tsv") else ","
    slug = slugify(task)
    questions = []
    for index, row in enumerate(csv.DictReader(io.StringIO(text), delimiter=delimiter)):
        genes = [g for g in re.split(r"[\s,]+", row[genes_column]) if g]
        questions.append(
            Question(
                id=f"genesets.{slug}.{index:03d}",
                benchmark="genesets",
                task=task,
                task_slug=slug,
                index=index,
                text=" ".join(genes),
                gold=row[name_column].strip(),
                source_id=row[id_column],
            )
        )
    return questions


def load_all(local_path) -> list[Question]:
    """The whole question table; ``local_path(file)``: where an upstream file lies."""
    questions = []
    for benchmark, file in BENCHMARK_FILES.items():
        questions += load_benchmark(benchmark, local_path(file))
    for task, (file, *_) in GENESET_FILES.items():
        questions += load_genesets(task, local_path(file))
    return questions


def write_question_table(path: Path) -> int:
    """The whole question table, from the local copies of the upstream files, written
    to ``path``; returns the number of questions."""
    from .paths import upstream_path

    questions = load_all(lambda file: Path(upstream_path(file)))
    write_questions(questions, path)
    return len(questions)


def write_questions(questions: Iterable[Question], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        for q in questions:
            fh.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_questions(path: Path) -> list[Question]:
    return [Question(**row) for row in read_jsonl(path)]


def tasks_of(benchmark: str) -> list[str]:
    """Upstream task names of a benchmark, in report order."""
    if benchmark == "geneturing":
        return [t for tasks in GENETURING_MODULES.values() for t in tasks]
    if benchmark == "genehop":
        return list(GENEHOP_TASKS)
    if benchmark == "genesets":
        return list(GENESET_FILES)
    raise KeyError(f"unknown benchmark {benchmark!r}; known: geneturing, genehop, genesets")


def is_sample(task: str) -> bool:
    """A toy sample of a dataset (run only when a run names it)."""
    return task.endswith(" toy")


def task_by_slug(benchmark: str, slug: str) -> str:
    for task in tasks_of(benchmark):
        if slugify(task) == slug:
            return task
    raise KeyError(f"benchmark {benchmark!r} has no task with slug {slug!r}")
