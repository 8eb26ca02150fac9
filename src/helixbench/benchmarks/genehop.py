"""GeneHop, GeneGPT's multi-hop benchmark (``data/genehop.json``: 3 tasks, 50
questions each). Two of its tasks are free text or lists scored as the paper judged
them: SNP gene function by ROUGE and embedding similarity, sequence gene alias by
alias recall."""

from ..datasets.questions import load_task_dict
from ..datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup
from . import Benchmark

FILE = lookup(GENEGPT_REPO, "data/genehop.json", GENEGPT_COMMIT)
TASKS = ("SNP gene function", "Disease gene location", "sequence gene alias")

BENCHMARKS = (
    Benchmark(
        name="genehop",
        label="GeneHop",
        order=20,
        files=(FILE,),
        modules={"": TASKS},
        load=lambda local: load_task_dict("genehop", local(FILE)),
        scorers={
            "SNP gene function": ("rougeL", "rouge1", "rouge2", "embedding"),
            "sequence gene alias": ("alias_recall",),
        },
        citation=(
            "GeneHop: Jin, Yang, Chen and Lu, GeneGPT: augmenting large language models with "
            "domain tools for improved access to biomedical information, Bioinformatics 2024; "
            f"{GENEGPT_REPO} @ {GENEGPT_COMMIT[:12]}, data/genehop.json"
        ),
        licence="public domain (NCBI's notice, ncbi/GeneGPT LICENSE)",
    ),
)
