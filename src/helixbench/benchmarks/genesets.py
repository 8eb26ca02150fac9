"""GeneAgent's gene sets: one task per dataset (GO, NeST, MSigDB) and per 3-set toy
sample of each. A question's text is its genes, space-separated, its gold the
curated name, its ``source_id`` the set's id (GO:0032385, NEST:256). Names are
scored as GeneAgent scores them: embedding similarity, ROUGE, and the background
percentile of the true name."""

import csv
import io
import re

from ..datasets.jsonfiles import read_text
from ..datasets.questions import Question
from ..datasets.upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, lookup
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
# The dataset each task's sets come from (a toy file samples its dataset).
DATASET = {task: task.removesuffix(" toy") for task in FILES}
SCORERS = ("embedding", "rougeL", "rouge1", "rouge2", "percentile")


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


BENCHMARKS = (
    Benchmark(
        name="genesets",
        label="GeneAgent's gene sets",
        order=30,
        files=tuple(f for f, *_ in FILES.values()),
        modules={"": tuple(FILES)},
        load=lambda local: [q for t, (f, *_) in FILES.items() for q in load_genesets(t, local(f))],
        scorers=dict.fromkeys(FILES, SCORERS),
        primary="embedding",
        samples=tuple(t for t in FILES if t.endswith(" toy")),
        citation=(
            "GeneAgent: Wang et al., GeneAgent: self-verification language agent for gene-set "
            f"analysis using domain databases, Nature Methods 2025; {GENEAGENT_REPO} @ "
            f"{GENEAGENT_COMMIT[:12]}, Datasets/"
        ),
        licence="public domain (NLM's notice, ncbi-nlp/GeneAgent LICENSE)",
    ),
)
