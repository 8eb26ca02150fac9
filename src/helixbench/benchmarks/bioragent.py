"""BioRAGent's evaluation tasks: every CSV file of ``evaluation_task/`` at the pinned
commit, one task per file named by its file name (``gene_alias``, ``BioASQ_yesno``),
the folder as its module; rows without a question are left out. Its copies of
GeneTuring tasks take GeneTuring's rules; lists add recall and precision; free texts
are scored as GeneHop's SNP gene function."""

from pathlib import PurePosixPath

from ..datasets.questions import csv_rows, table_questions
from ..datasets.upstream import BIORAGENT_COMMIT, BIORAGENT_REPO, listdir
from . import Benchmark

FOLDER = "evaluation_task/"
# Deeper folders first (single-hop tasks, then multi-hop, then the files at the top).
FILES = {
    PurePosixPath(f.path).stem: f
    for f in sorted(
        listdir(BIORAGENT_REPO, BIORAGENT_COMMIT, FOLDER),
        key=lambda f: (-f.path.count("/"), f.path),
    )
    if f.path.endswith(".csv")
}


def module_of_file(task: str) -> str:
    """A task's module: the folder its file lies in (``annotation``,
    ``Multi_hop_Task``), or the file's own name for a file at the top."""
    folder = PurePosixPath(FILES[task].path).parent.name
    return folder if folder != FOLDER.strip("/") else task


def load(local):
    """Each task file (``question, Goldstandard``; BioASQ's also ``id``)."""
    questions = []
    for task, file in FILES.items():
        rows = [
            (task, r["question"], r["Goldstandard"], r.get("id")) for r in csv_rows(local(file))
        ]
        questions += table_questions("bioragent", rows)
    return questions


MODULES: dict[str, tuple[str, ...]] = {}
for _task in FILES:  # grouped by module, in file order within each
    MODULES[module_of_file(_task)] = (*MODULES.get(module_of_file(_task), ()), _task)

LISTS = ("genegpt", "extracted", "strict", "list_recall", "list_precision")
FREE_TEXT = ("rougeL", "embedding")
BENCHMARKS = (
    Benchmark(
        name="bioragent",
        label="BioRAGent",
        order=50,
        files=tuple(FILES.values()),
        modules=MODULES,
        load=load,
        scorers={
            "gene_disease_association": LISTS,
            "disease_gene_location": LISTS,
            "phenotype_gene_location": LISTS,
            "phenotype_gene_association": ("list_recall", "list_precision"),
            "phenotype_disease_association": ("list_recall", "list_precision"),
            **dict.fromkeys(
                (
                    "gene_function",
                    "protein_function",
                    "disease_definition",
                    "phenotype_definition",
                    "SNP_gene_function",
                ),
                FREE_TEXT,
            ),
            "BioASQ_yesno": ("yes_no",),
        },
        in_bank=True,
        citation=(
            f"BioRAGent's evaluation tasks: {BIORAGENT_REPO} @ {BIORAGENT_COMMIT[:12]}, "
            "evaluation_task/ (BioASQ_yesno.csv: a subset of BioASQ Task B yes/no questions)"
        ),
        licence="none stated (fetched at the pinned commit, never copied)",
    ),
)
