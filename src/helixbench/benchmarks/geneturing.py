"""GeneTuring as GeneGPT's repository holds it (``data/geneturing.json``: 12 tasks, 50
questions each, ``{task: {question: gold}}``), grouped by the GeneGPT paper's modules
(Table 2). Four of its items are GeneGPT's demonstrations, scored like the rest
(reference.md, section 2); each carries its label (``Dm.1``..``Dm.4``)."""

from ..datasets.questions import load_task_dict
from ..datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup
from . import Benchmark

FILE = lookup(GENEGPT_REPO, "data/geneturing.json", GENEGPT_COMMIT)
# GeneTuring's tasks grouped by the paper's modules (Table 2 order).
MODULES = {
    "Nomenclature": ("Gene alias", "Gene name conversion"),
    "Genomic location": ("Gene SNP association", "Gene location", "SNP location"),
    "Functional analysis": ("Gene disease association", "Protein-coding genes"),
    "Sequence alignment": ("Human genome DNA aligment", "Multi-species DNA aligment"),
}
# The GeneGPT demonstrations are scored test items: the label of the one each reuses.
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

BENCHMARKS = (
    Benchmark(
        name="geneturing",
        label="GeneTuring",
        order=10,
        files=(FILE,),
        modules=MODULES,
        load=lambda local: load_task_dict("geneturing", local(FILE), DEMONSTRATION_ITEMS),
        citation=(
            "GeneTuring: Hou and Ji, GeneTuring tests GPT models in genomics, bioRxiv 2023 "
            f"(10.1101/2023.03.11.532238v1), as GeneGPT holds it: {GENEGPT_REPO} @ "
            f"{GENEGPT_COMMIT[:12]}, data/geneturing.json"
        ),
        licence="public domain (NCBI's notice, ncbi/GeneGPT LICENSE)",
    ),
)
