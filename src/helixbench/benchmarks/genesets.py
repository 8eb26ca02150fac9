"""GeneAgent's gene sets: one task per dataset (GO, NeST, MSigDB) and per 3-set toy
sample of each. A question's text is its genes, space-separated, its gold the
curated name, its ``source_id`` the set's id (GO:0032385, NEST:256). Names are
scored as GeneAgent scores them: embedding similarity, ROUGE, and the background
percentile of the true name.

Hu et al.'s GO sets (the GeneAgent paper's baseline, their repository's
``data/GO_term_analysis``) are tasks run only where a run names them: their 1,000
sets, and the 100 of their model comparison each at three contamination levels (the
real genes, half and all of them replaced at random, as their files give them; the
gold stays the term's name). They add two measures of a reply: ``named`` (0 where
the model calls the genes a "System of unrelated proteins", as Hu et al.'s prompt
asks it to when it finds no process) and the model's own ``confidence``.
"""

import csv
import io
import re

from ..datasets.jsonfiles import read_text
from ..datasets.questions import Question
from ..datasets.upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, HU_COMMIT, HU_REPO, lookup
from . import Benchmark


def _file(path: str):
    return lookup(GENEAGENT_REPO, path, GENEAGENT_COMMIT)


# GeneAgent's datasets, one task each: (file, id column, name column, genes column).
FILES = {
    "GO": (_file("Datasets/Gene ontology/GO_terms.csv"), "GO", "Term_Description", "Genes"),
    "NeST": (_file("Datasets/NeST/NeST.tsv"), "NEST ID", "name_new", "Genes"),
    "MSigDB": (_file("Datasets/MsigDB/MsigDB.csv"), "ID", "Name", "Genes"),
    "GO toy": (_file("Datasets/Gene ontology/GO_toy.csv"), "GO", "Term_Description", "Genes"),
    "NeST toy": (_file("Datasets/NeST/NeST_toy.tsv"), "NEST ID", "name_new", "Genes"),
    "MSigDB toy": (_file("Datasets/MsigDB/MsigDB_toy.csv"), "ID", "Name", "Genes"),
}
HU_SETS = lookup(HU_REPO, "data/GO_term_analysis/1000_selected_go_contaminated.csv", HU_COMMIT)
# The 100 sets of Hu et al.'s model comparison: those of its files (each holds the same).
HU_COMPARED = lookup(
    HU_REPO,
    "data/GO_term_analysis/model_compare/LLM_processed_model_compare_100set_gpt_4.tsv",
    HU_COMMIT,
)
# Hu et al.'s tasks: (genes column of HU_SETS, only the compared 100, contamination %).
HU_TASKS = {
    "Hu GO 1000": ("Genes", False, 0),
    "Hu GO 100": ("Genes", True, 0),
    "Hu GO 100 (50% contaminated)": ("50perc_contaminated_Genes", True, 50),
    "Hu GO 100 (100% contaminated)": ("100perc_contaminated_Genes", True, 100),
}
# The dataset each task's sets come from (a toy file samples its dataset; Hu et al.'s
# sets are GO's, so the GO source is masked for them as for GeneAgent's).
DATASET = {task: task.removesuffix(" toy") for task in FILES} | dict.fromkeys(HU_TASKS, "GO")
SCORERS = ("embedding", "rougeL", "rouge1", "rouge2", "percentile")
# A contaminated set's name is not its term's (Hu et al. score it by whether the model
# still names a process, and how sure it says it is).
HU_SCORERS = {0: (*SCORERS, "named", "confidence"), 50: ("named", "confidence")}


def load_genesets(task: str, path) -> list[Question]:
    """The gene sets of one GeneAgent dataset file, in file order. Genes are given
    space- or comma-separated upstream; we keep them space-separated."""
    _file_, id_column, name_column, genes_column = FILES[task]
    text = read_text(path)
    delimiter = "\t" if str(path).endswith(".tsv") else ","
    questions = []
    for index, row in enumerate(csv.DictReader(io.StringIO(text), delimiter=delimiter)):
        genes = " ".join(g for g in re.split(r"[\s,]+", row[genes_column]) if g)
        name, source_id = row[name_column].strip(), row[id_column]
        questions.append(Question.at("genesets", task, index, genes, name, source_id=source_id))
    return questions


def load_hu_sets(local) -> list[Question]:
    """Hu et al.'s sets, one task per entry of :data:`HU_TASKS`, in their file's order."""
    rows = list(csv.DictReader(io.StringIO(read_text(local(HU_SETS)))))
    compared_rows = csv.DictReader(io.StringIO(read_text(local(HU_COMPARED))), delimiter="\t")
    compared = {row["GO"] for row in compared_rows}
    questions = []
    for task, (genes_column, only_compared, _level) in HU_TASKS.items():
        chosen = [row for row in rows if row["GO"] in compared or not only_compared]
        for index, row in enumerate(chosen):
            genes = " ".join(row[genes_column].split())
            name = row["Term_Description"].strip()
            questions.append(Question.at("genesets", task, index, genes, name, source_id=row["GO"]))
    return questions


def _load(local) -> list[Question]:
    own = [q for t, (f, *_) in FILES.items() for q in load_genesets(t, local(f))]
    return own + load_hu_sets(local)


BENCHMARKS = (
    Benchmark(
        name="genesets",
        label="GeneAgent's gene sets",
        order=30,
        files=(*(f for f, *_ in FILES.values()), HU_SETS, HU_COMPARED),
        modules={"": (*FILES, *HU_TASKS)},
        load=_load,
        scorers=dict.fromkeys(FILES, SCORERS)
        | {task: HU_SCORERS[min(level, 50)] for task, (*_, level) in HU_TASKS.items()},
        primary="embedding",
        samples=(*(t for t in FILES if t.endswith(" toy")), *HU_TASKS),
        citation=(
            "GeneAgent: Wang et al., GeneAgent: self-verification language agent for gene-set "
            f"analysis using domain databases, Nature Methods 2025; {GENEAGENT_REPO} @ "
            f"{GENEAGENT_COMMIT[:12]}, Datasets/. Hu et al.'s sets: Hu et al., Evaluation of "
            "large language models for discovery of gene set function, Nature Methods 2025; "
            f"{HU_REPO} @ {HU_COMMIT[:12]}, data/GO_term_analysis/"
        ),
        licence="public domain (NLM's notice, ncbi-nlp/GeneAgent LICENSE); Hu et al.'s: MIT",
    ),
)
