"""GeneTuring's full benchmark as its authors published it in 2025 (Winnie09/GeneTuring,
``GeneGPT/Q&A_dataset.csv``): its ``Module`` column is the task, ``Question`` the text
as written (completion style), ``Goldstandard`` the gold; 16 modules grouped as
GeneGPT's Table 2 groups GeneTuring, each "programming" variant beside its task, the
two sequence tasks in a group of their own. Its tasks that ask what a GeneTuring task
asks take GeneTuring's rules (:data:`helixbench.scoring.genegpt.SAME_RULES`)."""

from ..datasets.questions import csv_rows, table_questions
from ..datasets.upstream import GENETURING2025_COMMIT, GENETURING2025_REPO, lookup
from . import Benchmark

FILE = lookup(GENETURING2025_REPO, "GeneGPT/Q&A_dataset.csv", GENETURING2025_COMMIT)
MODULES = {
    "Nomenclature": ("Gene alias", "Gene name conversion", "Gene name extraction"),
    "Genomic location": ("Gene SNP association", "Gene location", "SNP location"),
    "Functional analysis": (
        "Gene disease association",
        "Protein-coding genes",
        "Gene ontology",
        "TF regulation",
    ),
    "Sequence alignment": (
        "Human genome DNA aligment",
        "Human genome DNA aligment programming",
        "Multi-species DNA aligment",
        "Multi-species DNA aligment programming",
    ),
    "Sequence": ("Amino acid translation", "DNA sequence extraction"),
}


def load(local):
    """One task per ``Module``, in file order."""
    rows = [(r["Module"], r["Question"], r["Goldstandard"], None) for r in csv_rows(local(FILE))]
    return table_questions("geneturing2025", rows)


BENCHMARKS = (
    Benchmark(
        name="geneturing2025",
        label="GeneTuring 2025",
        order=40,
        files=(FILE,),
        modules=MODULES,
        load=load,
        # Beyond GeneTuring's tasks (those, and their "programming" variants, take
        # GeneTuring's rules).
        scorers={
            "Gene name extraction": ("names_f1", "names_recall", "names_precision"),
            "Gene ontology": ("rougeL", "embedding"),
            "TF regulation": ("tf_label",),
            "Amino acid translation": ("sequence_exact", "sequence_identity"),
            "DNA sequence extraction": ("sequence_exact", "sequence_identity"),
        },
        in_bank=True,
        citation=(
            "GeneTuring 2025: Shang, Xu, Ji and Hou, Benchmarking large language models for "
            "genomic knowledge with GeneTuring, bioRxiv 2025 (10.1101/2023.03.11.532238v2); "
            f"{GENETURING2025_REPO} @ {GENETURING2025_COMMIT[:12]}, GeneGPT/Q&A_dataset.csv"
        ),
        licence="none stated (fetched at the pinned commit, never copied)",
    ),
)
