"""GeneTuring, GeneHop, GeneAgent's gene sets, GeneTuring 2025 and BioRAGent's tasks
as one question table.

Each question has a stable id ``<benchmark>.<task slug>.<index>`` (its position in
the pinned upstream file), the upstream task name as its label (misspellings
kept: "Human genome DNA aligment"), and a slug for file names and wildcards.

Benchmark ``geneturing2025`` is GeneTuring's full benchmark as its authors published
it (Winnie09/GeneTuring, ``GeneGPT/Q&A_dataset.csv``): its ``Module`` column is the
task, ``Question`` the text as written (completion style), ``Goldstandard`` the gold.
Benchmark ``bioragent`` is BioRAGent's ``evaluation_task/`` files, one task per CSV
file named by its file name (``gene_alias``, ``BioASQ_yesno``), the folder as its
module; rows without a question are left out. Items shared with GeneTuring (2023)
or GeneHop carry the id of their counterpart (:mod:`helixbench.datasets.overlap`).

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
from pathlib import Path, PurePosixPath

from .jsonfiles import read_json, read_jsonl, read_text
from .overlap import link_overlaps
from .upstream import (
    BIORAGENT_COMMIT,
    BIORAGENT_REPO,
    GENEAGENT_COMMIT,
    GENEAGENT_REPO,
    GENEGPT_COMMIT,
    GENEGPT_REPO,
    GENETURING2025_COMMIT,
    GENETURING2025_REPO,
    listdir,
    lookup,
)

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


GENETURING2025_FILE = lookup(GENETURING2025_REPO, "GeneGPT/Q&A_dataset.csv", GENETURING2025_COMMIT)
# BioRAGent's tasks: every CSV file of evaluation_task/ at the pinned commit, by name.
BIORAGENT_DIR = "evaluation_task/"
# Deeper folders first (single-hop tasks, then multi-hop, then the files at the top).
BIORAGENT_FILES = {
    PurePosixPath(f.path).stem: f
    for f in sorted(
        listdir(BIORAGENT_REPO, BIORAGENT_COMMIT, BIORAGENT_DIR),
        key=lambda f: (-f.path.count("/"), f.path),
    )
    if f.path.endswith(".csv")
}


def bioragent_module(task: str) -> str:
    """A BioRAGent task's module: the folder its file lies in (``annotation``,
    ``Multi_hop_Task``), or the file's own name for a file at the top."""
    folder = PurePosixPath(BIORAGENT_FILES[task].path).parent.name
    return folder if folder != BIORAGENT_DIR.strip("/") else task


def question_files() -> list:
    """Every upstream file the question table is built from."""
    return [
        *BENCHMARK_FILES.values(),
        *(f for f, *_ in GENESET_FILES.values()),
        GENETURING2025_FILE,
        *BIORAGENT_FILES.values(),
    ]


# GeneTuring's tasks grouped by the paper's modules (Table 2 order).
GENETURING_MODULES = {
    "Nomenclature": ["Gene alias", "Gene name conversion"],
    "Genomic location": ["Gene SNP association", "Gene location", "SNP location"],
    "Functional analysis": ["Gene disease association", "Protein-coding genes"],
    "Sequence alignment": ["Human genome DNA aligment", "Multi-species DNA aligment"],
}
GENEHOP_TASKS = ["SNP gene function", "Disease gene location", "sequence gene alias"]
# GeneTuring 2025's 16 modules grouped as GeneGPT's Table 2 groups GeneTuring, each
# "programming" variant beside its task, the two sequence tasks in a group of their own.
GENETURING2025_MODULES = {
    "Nomenclature": ["Gene alias", "Gene name conversion", "Gene name extraction"],
    "Genomic location": ["Gene SNP association", "Gene location", "SNP location"],
    "Functional analysis": [
        "Gene disease association",
        "Protein-coding genes",
        "Gene ontology",
        "TF regulation",
    ],
    "Sequence alignment": [
        "Human genome DNA aligment",
        "Human genome DNA aligment programming",
        "Multi-species DNA aligment",
        "Multi-species DNA aligment programming",
    ],
    "Sequence": ["Amino acid translation", "DNA sequence extraction"],
}
# The benchmarks of the question table, in report order.
BENCHMARKS = ("geneturing", "genehop", "genesets", "geneturing2025", "bioragent")

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


def module_of(task: str, benchmark: str = "geneturing") -> str | None:
    """A task's module (GeneTuring's as the paper groups them; GeneTuring 2025's; a
    BioRAGent task's folder), else None."""
    if benchmark == "bioragent":
        return bioragent_module(task) if task in BIORAGENT_FILES else None
    modules = GENETURING2025_MODULES if benchmark == "geneturing2025" else GENETURING_MODULES
    return next((m for m, tasks in modules.items() if task in tasks), None)


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
    source_id: str | None = None  # a gene set's id in its dataset (GO:0032385); BioASQ's id
    # The GeneTuring (2023) or GeneHop question this one repeats, and how
    # (helixbench.datasets.overlap): "verbatim", "instruction dropped" or "rephrased".
    overlap_id: str | None = None
    overlap: str | None = None

    @classmethod
    def at(cls, benchmark: str, task: str, index: int, text: str, gold, **fields) -> Question:
        """The question at ``index`` of ``task``, with its stable id and slug."""
        slug = slugify(task)
        return cls(
            f"{benchmark}.{slug}.{index:03d}", benchmark, task, slug, index, text, gold, **fields
        )

    @property
    def genes(self) -> list[str]:
        """A gene set's genes (``genesets`` questions)."""
        return self.text.split()


def load_benchmark(benchmark: str, path: Path) -> list[Question]:
    """Questions of one upstream data file (``{task: {question: gold}}``), in file order."""
    data = read_json(path)
    questions = []
    for task, items in data.items():
        for index, (text, gold) in enumerate(items.items()):
            demo = DEMONSTRATION_ITEMS.get((task, text))
            questions.append(Question.at(benchmark, task, index, text, gold, demo=demo))
    return questions


def load_genesets(task: str, path: Path) -> list[Question]:
    """The gene sets of one GeneAgent dataset file, in file order. Genes are given
    space- or comma-separated upstream; we keep them space-separated."""
    _file, id_column, name_column, genes_column = GENESET_FILES[task]
    text = read_text(path)
    delimiter = "\t" if str(path).endswith(".tsv") else ","
    questions = []
    for index, row in enumerate(csv.DictReader(io.StringIO(text), delimiter=delimiter)):
        genes = " ".join(g for g in re.split(r"[\s,]+", row[genes_column]) if g)
        name, source_id = row[name_column].strip(), row[id_column]
        questions.append(Question.at("genesets", task, index, genes, name, source_id=source_id))
    return questions


def _csv_rows(path: Path) -> list[dict]:
    """A CSV file's rows (a byte-order mark dropped; the unnamed empty column of a
    trailing comma left out)."""
    text = read_text(path).lstrip("\ufeff")
    rows = csv.DictReader(io.StringIO(text))
    return [{k: v for k, v in row.items() if k} for row in rows]


def _table_questions(benchmark: str, rows: list[tuple[str, str, str, str | None]]):
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


def load_geneturing2025(path: Path) -> list[Question]:
    """GeneTuring 2025: one task per ``Module``, in file order."""
    rows = [(r["Module"], r["Question"], r["Goldstandard"], None) for r in _csv_rows(path)]
    return _table_questions("geneturing2025", rows)


def load_bioragent(task: str, path: Path) -> list[Question]:
    """One BioRAGent task file (``question, Goldstandard``; BioASQ's also ``id``)."""
    rows = [(task, r["question"], r["Goldstandard"], r.get("id")) for r in _csv_rows(path)]
    return _table_questions("bioragent", rows)


def load_all(local_path) -> list[Question]:
    """The whole question table; ``local_path(file)``: where an upstream file lies."""
    questions = []
    for benchmark, file in BENCHMARK_FILES.items():
        questions += load_benchmark(benchmark, local_path(file))
    for task, (file, *_) in GENESET_FILES.items():
        questions += load_genesets(task, local_path(file))
    questions += load_geneturing2025(local_path(GENETURING2025_FILE))
    for task, file in BIORAGENT_FILES.items():
        questions += load_bioragent(task, local_path(file))
    return link_overlaps(questions)


def local_question_table(mirror: Path | None) -> list[Question] | None:
    """The question table from the files at hand (the mirror's, else the fetched
    copies), or None where one is missing: for ``helixbench plan`` before a run."""
    from ..paths import upstream_path

    def local(file) -> Path:
        return mirror / file.relpath if mirror else Path(upstream_path(file))

    if not all(local(file).is_file() for file in question_files()):
        return None
    return load_all(local)


def write_question_table(path: Path) -> int:
    """The whole question table, from the local copies of the upstream files, written
    to ``path``; returns the number of questions."""
    from ..paths import upstream_path

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
    if benchmark == "geneturing2025":
        return [t for tasks in GENETURING2025_MODULES.values() for t in tasks]
    if benchmark == "bioragent":  # grouped by module, in file order within each
        modules = dict.fromkeys(bioragent_module(t) for t in BIORAGENT_FILES)
        return [t for m in modules for t in BIORAGENT_FILES if bioragent_module(t) == m]
    raise KeyError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")


def is_sample(task: str) -> bool:
    """A toy sample of a dataset (run only when a run names it)."""
    return task.endswith(" toy")


def task_by_slug(benchmark: str, slug: str) -> str:
    for task in tasks_of(benchmark):
        if slugify(task) == slug:
            return task
    raise KeyError(f"benchmark {benchmark!r} has no task with slug {slug!r}")
