"""GeneGPT's upstream evaluator (evaluate.py), reproduced per question.

Normalisation per task (reference.md section 3): the location tasks take the
last whitespace-separated token and prepend ``chr`` when it is missing; the list
tasks split on ``", "`` and score the fraction of gold items found as whole
elements; yes/no and Latin species names are mapped; everything else is exact
equality after stripping and removing ``"Answer: "``. ``lengthError`` and
``numError`` are scored like any text (0). Only GeneTuring and GeneHop's
"Disease gene location" are scored upstream; other tasks return None, except the
newer benchmarks' tasks that ask the same thing (:data:`SAME_RULES`), which take
that task's rules.
"""

from __future__ import annotations

SPECIES = {
    "Caenorhabditis elegans": "worm",
    "Homo sapiens": "human",
    "Danio rerio": "zebrafish",
    "Mus musculus": "mouse",
    "Saccharomyces cerevisiae": "yeast",
    "Rattus norvegicus": "rat",
    "Gallus gallus": "chicken",
}
LOCATION_TASKS = {"SNP location", "Gene location"}
LIST_TASKS = {"Gene disease association", "Disease gene location"}
SCORED_TASKS = {
    "Gene alias",
    "Gene name conversion",
    "Gene SNP association",
    "Gene location",
    "SNP location",
    "Gene disease association",
    "Protein-coding genes",
    "Human genome DNA aligment",
    "Multi-species DNA aligment",
    "Disease gene location",
}
# Tasks of GeneTuring 2025 and BioRAGent that ask what a GeneTuring or GeneHop task
# asks, in the same answer form: scored by that task's rules.
SAME_RULES = {
    "Human genome DNA aligment programming": "Human genome DNA aligment",
    "Multi-species DNA aligment programming": "Multi-species DNA aligment",
    "gene_alias": "Gene alias",
    "gene_location": "Gene location",
    "SNP_location": "SNP location",
    "gene_SNP_association": "Gene SNP association",
    "gene_disease_association": "Gene disease association",
    "disease_gene_location": "Disease gene location",
    "phenotype_gene_location": "Disease gene location",
}


def rules_of(task: str) -> str:
    """The GeneTuring or GeneHop task whose scoring rules ``task`` takes."""
    return SAME_RULES.get(task, task)


def normalise(task: str, answer: str) -> str | list[str]:
    """The prediction upstream compares with the gold."""
    task = rules_of(task)
    if task in LOCATION_TASKS:
        tokens = answer.strip().split()
        token = tokens[-1] if tokens else ""
        return token if "chr" in token else "chr" + token
    text = answer.strip().replace("Answer: ", "")
    if task in LIST_TASKS:
        return text.split(", ")
    if task == "Protein-coding genes":
        return {"Yes": "TRUE", "No": "NA"}.get(text, text)
    if task == "Multi-species DNA aligment":
        return SPECIES.get(text, text)
    return text


def genegpt_score(task: str, answer: str | None, gold, question: str = "") -> float | None:
    task = rules_of(task)
    if task not in SCORED_TASKS:
        return None
    prediction = normalise(task, answer or "")
    if task in LIST_TASKS:
        golds = gold.split(", ") if isinstance(gold, str) else list(gold)
        return sum(g in prediction for g in golds) / len(golds)
    if task == "Human genome DNA aligment":
        if prediction == gold:
            return 1.0
        return 0.5 if prediction.split(":")[0] == gold.split(":")[0] else 0.0
    return float(prediction == gold)
