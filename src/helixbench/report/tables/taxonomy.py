"""An automatic version of GeneGPT's error taxonomy (paper section 4.4, Table 4).

Every wrong answer (under the task's primary scorer) gets one type, tried in order:

- ``E1``: no tool call, or none to the database the task needs (gene, snp, omim,
  BLAST), e.g. the gene database asked for a disease.
- ``E2``: the right database, but the arguments are wrong (an SNP id sent with its
  ``rs`` prefix, as an id or as a search term that found nothing) or every call to
  it failed (an HTTP or tool error, an E-utils
  ``ERROR`` reply). An empty result is no failure: E4, as in the paper.
- ``E3``: the gold answer is in a tool reply, but not in the final answer.
- ``E4``: the right calls, and no reply contains the answer.
- ``O``: the rest: the model ran out of room (``lengthError``), out of calls
  (``numError``) or failed (``model_error``, a replay miss); and the alignment tasks
  whose BLAST reply lacks the gold (another reference genome, no hit), which the
  paper files under O.

"The gold is in a reply" is a whole-word search of the tool replies for what would
answer the question: the gold symbol or list item, a chromosome as E-utils writes it
(``"chromosome":"8"``, ``"chr":"8"``), an alignment's start coordinate, the species'
Latin name, ``protein-coding``, or the cleaned gold text of a gene function.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from ...scoring.genegpt import SPECIES

TYPES = ("E1", "E2", "E3", "E4", "O")
# Not one of the paper's types: right once extracted from a wordy final text
# (helixbench.scoring.extract), wrong only as upstream's scorer reads it.
FORMAT_ERROR = "F"

# The database each task needs (E-utils db= or BLAST); GeneHop tasks: the first hop.
NEEDED_DB = {
    "Gene alias": "gene",
    "Gene name conversion": "gene",
    "Gene location": "gene",
    "Protein-coding genes": "gene",
    "Gene SNP association": "snp",
    "SNP location": "snp",
    "Gene disease association": "omim",
    "Human genome DNA aligment": "blast",
    "Multi-species DNA aligment": "blast",
    "SNP gene function": "snp",
    "Disease gene location": "omim",
    "sequence gene alias": "blast",
}
ALIGNMENT_TASKS = {"Human genome DNA aligment", "Multi-species DNA aligment"}
RUN_ERRORS = {"lengthError", "numError", "model_error", "model_miss"}
# An E-utils error body. An empty result is not a failure: the paper files "the gene
# is not in the database" under E4.
FAILED_REPLY = re.compile(r"\bERROR\b|\bInvalid\b")


def call_database(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.hostname == "blast.ncbi.nlm.nih.gov":
        return "blast"
    db = parse_qs(parts.query).get("db")
    return db[0].lower() if db else None


EMPTY_RESULT = re.compile(r'"count":\s*"0"|<Count>0</Count>')


def _wrong_arguments(call: dict) -> bool:
    """An SNP id sent with its ``rs`` prefix: as ``id`` (never valid) or as a search
    ``term`` that found nothing (dbSNP indexes the bare number)."""
    url = call.get("url", "")
    if call_database(url) != "snp":
        return False
    query = parse_qs(urlsplit(url).query)

    def prefixed(key: str) -> bool:
        return any(
            i.strip().lower().startswith("rs") for v in query.get(key, []) for i in v.split(",")
        )

    empty = bool(EMPTY_RESULT.search(call.get("rendered") or ""))
    return prefixed("id") or (prefixed("term") and empty)


def _call_failed(data: dict) -> bool:
    if data.get("error") or (data.get("status") not in (None, 200)):
        return True
    return bool(FAILED_REPLY.search(data.get("rendered") or ""))


def evidence(task: str, gold) -> list[re.Pattern]:
    """Patterns whose presence in a tool reply means the reply held the answer."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    if task == "Gene disease association":
        golds = gold.split(", ")

    def word(text: str) -> re.Pattern:
        return re.compile(r"(?<![\w-])" + re.escape(text) + r"(?![\w-])")

    if task in ("Gene location", "SNP location"):
        number = re.escape(golds[0].removeprefix("chr"))
        return [re.compile(r"(?i)\b(?:chr|chromosome)\W{0,6}" + number + r"(?![\w])")]
    if task == "Human genome DNA aligment":
        start = golds[0].split(":")[-1].split("-")[0]
        return [word(start)]
    if task == "Multi-species DNA aligment":
        latin = [name for name, common in SPECIES.items() if common == golds[0]]
        return [re.compile(re.escape(n), re.I) for n in latin + golds]
    if task == "Protein-coding genes":
        return [re.compile(r"(?i)protein[- ]coding")] if golds[0] == "TRUE" else []
    if task == "SNP gene function":
        from ...scoring.text import clean_text

        return [re.compile(re.escape(clean_text(golds[0])[:60]), re.I)]
    if task == "sequence gene alias":
        return [re.compile(r"(?<![\w-])" + re.escape(g) + r"(?![\w-])", re.I) for g in golds]
    return [word(g) for g in golds]


def classify(task: str, record: dict, gold) -> str:
    """The error type of a wrong answer (see the module docstring)."""
    if record.get("error") in RUN_ERRORS:
        return "O"
    calls = [e["data"] for e in record["events"] if e["type"] == "tool"]
    needed = NEEDED_DB.get(task)
    right = [c for c in calls if call_database(c.get("url", "")) == needed]
    if not right:
        return "E1"
    if any(_wrong_arguments(c) for c in right) or all(_call_failed(c) for c in right):
        return "E2"
    replies = "\n".join(c.get("rendered") or "" for c in calls)
    if any(p.search(replies) for p in evidence(task, gold)):
        return "E3"
    return "O" if task in ALIGNMENT_TASKS else "E4"


# GeneGPT paper, Table 4 (GeneGPT-slim's errors, judged by hand), as far as the
# reference text gives it: None where a cell is not stated.
PAPER_TABLE4 = {
    "Gene alias": (0, 0, 2, 6, 0),
    "Gene location": (0, 0, 0, 17, 0),
    "SNP location": (0, 1, 0, 0, 0),
    "Gene disease association": (15, 0, 0, 3, 2),
    "Human genome DNA aligment": (0, 0, 7, 0, None),
}


def agreement(counts: dict[str, dict[str, int]]) -> dict:
    """How our counts for the replayed slim run match Table 4, cell by cell.

    Without the paper's per-question labels the best measure is the overlap of the
    type counts: sum over stated cells of min(ours, paper), over the paper's sum. It
    is the share of the paper's errors that our rules put in the same type at most
    (an upper bound on per-question agreement).
    """
    matched = stated = 0
    rows = []
    for task, paper in PAPER_TABLE4.items():
        ours = counts.get(task, {})
        row = {"task": task}
        for kind, theirs in zip(TYPES, paper, strict=True):
            mine = ours.get(kind, 0)
            row[kind] = f"{mine} / {'?' if theirs is None else theirs}"
            if theirs is not None:
                matched += min(mine, theirs)
                stated += theirs
        rows.append(row)
    return {"rows": rows, "matched": matched, "stated": stated, "share": matched / stated}
