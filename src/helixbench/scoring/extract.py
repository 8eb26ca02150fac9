"""Format-robust answers: pull the answer out of a wordy final text, per task type.

GeneGPT's upstream scorer compares a bare answer (``Answer: chr8``); newer systems
answer in sentences ("Answer: No, it is a pseudogene", "Zebrafish (Danio rerio)")
that it scores 0 however right they are. The ``extracted`` scorer applies the
upstream scorer to the answer :func:`extract_answer` finds, so a run's upstream and
extracted scores differ exactly by its right-but-badly-formatted answers.

What ``extracted`` promises, against upstream's scorer on the same text (a test
checks both over every mirrored GeneGPT recording):

- an answer in its task's bare form scores exactly as upstream scores it (the
  extractor returns it unchanged);
- any other answer never scores lower: the score is the better of the text as
  given and the answer extracted from it, so formatting can only cost credit
  upstream, never here. (Upstream's last-token rule can credit a sentence that
  ends with the right chromosome; a rule that reads the first one named must not
  take that back.) Recorded runs without demonstrations answer in sentences
  (mask 010000: "Hint: ..."), so there the two scores do differ, upwards only.

The rules, in order, for each task type:

1. A text already in its task's bare form is returned unchanged: a chromosome, a
   coordinate range, Yes/No, a species name, one symbol, a comma-separated list of
   symbols or bands, as GeneGPT's runs with demonstrations answer.
2. Otherwise the text after the first ``Answer:`` (the whole text if none), with
   markdown emphasis dropped, is searched:

   - chromosome (gene and SNP location): the first ``chrN`` or ``chromosome N``;
   - coordinate range (human genome alignment): the first ``chrN:start-end``;
   - yes/no (protein-coding genes): a leading yes or no, else "is not a
     protein-coding gene" (No) or "is a protein-coding gene" (Yes);
   - species (multi-species alignment): the one species named, by Latin or common
     name (none or several: unchanged);
   - gene symbol (alias, name conversion, SNP association): "symbol ... is X",
     "gene X" or "associated with X", else the one symbol-like word of the answer's
     first line that the question does not contain;
   - gene list (disease association): the symbol-like words of the answer's first
     line that the question does not contain;
   - band list (disease gene location): every cytogenetic band (``3p24.3``) named.

   Where a rule finds nothing, the text is returned unchanged (and scores as it did).
"""

from __future__ import annotations

import re

from .genegpt import LOCATION_TASKS, SPECIES, normalise, rules_of

SYMBOL_TASKS = {"Gene alias", "Gene name conversion", "Gene SNP association"}
TASK_TYPES = {
    **{task: "chromosome" for task in LOCATION_TASKS},
    **{task: "symbol" for task in SYMBOL_TASKS},
    "Human genome DNA aligment": "range",
    "Protein-coding genes": "yes/no",
    "Multi-species DNA aligment": "species",
    "Gene disease association": "gene list",
    "Disease gene location": "band list",
}

ANSWER = re.compile(r"answer\s*:\s*", re.IGNORECASE)
EMPHASIS = re.compile(r"[*_`]+")
CHROMOSOME_NAME = r"(\d{1,2}|X|Y|MT|M)"
BARE_CHROMOSOME = re.compile(rf"^chr{CHROMOSOME_NAME}$")
CHROMOSOME = re.compile(rf"\b(?:chr|chromosome\s*){CHROMOSOME_NAME}\b", re.IGNORECASE)
RANGE = re.compile(
    rf"\b(?:chr|chromosome\s*){CHROMOSOME_NAME}\s*:\s*([\d,]+)\s*(?:-|–|to)\s*([\d,]+)",
    re.IGNORECASE,
)
BARE_RANGE = re.compile(rf"^chr{CHROMOSOME_NAME}:\d+-\d+$")
# A gene symbol as the answer gives it: letters, digits, hyphens, a dot or @ (HLA-A,
# C9orf72, MT-ND1, KRT12.5); at least one capital letter.
SYMBOL = r"[A-Za-z0-9][A-Za-z0-9@.\-]*[A-Za-z0-9@]|[A-Z]"
BARE_SYMBOL = re.compile(rf"^(?:{SYMBOL})$")
SYMBOL_WORD = re.compile(
    r"(?<![\w@.\-])([A-Z][A-Za-z0-9@\-]*[A-Z0-9][A-Za-z0-9@\-]*|[A-Z]\d+)(?![\w@\-])"
)
SYMBOL_PHRASES = (
    re.compile(rf"symbol\b[^.]*?\bis\s+\W?({SYMBOL})", re.IGNORECASE),
    re.compile(rf"\bassociated with (?:the )?(?:gene )?\W?({SYMBOL})", re.IGNORECASE),
    re.compile(rf"\bgene\s+\W?({SYMBOL})\b(?!\s+(?:symbol|id|database|record))", re.IGNORECASE),
)
BAND = re.compile(r"(?<![\w.])(?:\d{1,2}|X|Y)[pq]\d+(?:\.\d+)?(?![\w])")
BARE_BAND_LIST = re.compile(r"^(?:\d{1,2}|X|Y)[pq][\d.]+(?:, (?:\d{1,2}|X|Y)[pq][\d.]+)*,?$")
YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
NOT_CODING = re.compile(r"\bis not (?:a |described as a |an? )?protein[- ]coding", re.IGNORECASE)
CODING = re.compile(r"\bis (?:indeed )?a protein[- ]coding", re.IGNORECASE)
COMMON_NAMES = sorted(set(SPECIES.values()))
# Capitalised words that are not gene symbols in these answers.
NOT_SYMBOLS = {
    "DNA", "RNA", "SNP", "NCBI", "OMIM", "ID", "IDS", "BLAST", "UID", "HGNC", "GENE", "NA",
    "RID", "URL", "API", "JSON", "XML", "MIM", "II", "III", "IV", "NONE", "NOTE", "THE",
    "ANSWER", "HUMAN", "GRCH38", "GRCH37", "HG19", "HG38", "ENSEMBL", "NM", "NR", "NC",
}  # fmt: skip


def answer_text(text: str) -> str:
    """The part of a final text that states the answer: after its first ``Answer:``,
    markdown emphasis dropped, stripped."""
    match = ANSWER.search(text)
    body = text[match.end() :] if match else text
    return EMPHASIS.sub("", body).strip()


def task_type(task: str) -> str | None:
    """A task's answer type (a newer benchmark's task: that of the task whose rules it takes)."""
    return TASK_TYPES.get(rules_of(task))


def is_bare(task: str, text: str) -> bool:
    """Whether ``text`` is already in its task's bare form (see the module docstring)."""
    kind = task_type(task)
    body = text.strip().replace("Answer: ", "")
    if kind == "chromosome":
        return bool(BARE_CHROMOSOME.match(normalise(task, text)))
    if kind == "range":
        return bool(BARE_RANGE.match(body))
    if kind == "yes/no":
        return body in ("Yes", "No", "TRUE", "NA")
    if kind == "species":
        return body in SPECIES or body in COMMON_NAMES
    if kind == "symbol":
        return bool(BARE_SYMBOL.match(body))
    if kind == "gene list":
        return "\n" not in body and all(" " not in item.strip() for item in body.split(","))
    if kind == "band list":
        return bool(BARE_BAND_LIST.match(body)) or "\n" not in body and " " not in body
    return True  # a task without a type (free text): nothing to extract


def extract_answer(task: str, text: str | None, question: str = "") -> str | None:
    """The answer in ``text`` for ``task``, in the bare form GeneGPT's scorer expects."""
    if not text or is_bare(task, text):
        return text
    kind, body = task_type(task), answer_text(text)
    found = _EXTRACTORS[kind](body, question)
    return found if found else text


def _chromosome(body: str, question: str) -> str | None:
    match = CHROMOSOME.search(body)
    if match:
        return "chr" + match.group(1).upper().replace("CHR", "")
    token = body.split()[0].strip(".,;") if body.split() else ""
    return "chr" + token.upper() if re.fullmatch(CHROMOSOME_NAME, token, re.IGNORECASE) else None


def _range(body: str, question: str) -> str | None:
    match = RANGE.search(body)
    if not match:
        return None
    chrom, start, end = match.groups()
    return f"chr{chrom.upper()}:{start.replace(',', '')}-{end.replace(',', '')}"


def _yes_no(body: str, question: str) -> str | None:
    match = YES_NO.match(body)
    if match:
        return match.group(1).capitalize()
    if NOT_CODING.search(body):
        return "No"
    if CODING.search(body):
        return "Yes"
    return None


def _species(body: str, question: str) -> str | None:
    named = set()
    for latin, common in SPECIES.items():
        if re.search(rf"\b{re.escape(latin)}\b", body, re.IGNORECASE):
            named.add(common)
    for common in COMMON_NAMES:
        if re.search(rf"\b{common}\b", body, re.IGNORECASE):
            named.add(common)
    return named.pop() if len(named) == 1 else None


def _candidates(line: str, question: str) -> list[str]:
    asked = set(re.findall(r"[\w@.\-]+", question))
    words = [w.rstrip(".") for w in SYMBOL_WORD.findall(line)]
    return list(dict.fromkeys(w for w in words if w not in asked and w.upper() not in NOT_SYMBOLS))


def _symbol(body: str, question: str) -> str | None:
    first = body.splitlines()[0].strip().rstrip(".") if body else ""
    if BARE_SYMBOL.match(first):  # "Answer: ABLIM2" and then a note
        return first
    asked = set(re.findall(r"[\w@.\-]+", question))
    for phrase in SYMBOL_PHRASES:
        for match in phrase.finditer(body):
            word = match.group(1).rstrip(".")
            if word not in asked and word.upper() not in NOT_SYMBOLS and SYMBOL_WORD.match(word):
                return word
    candidates = _candidates(first, question)
    return candidates[0] if len(candidates) == 1 else None


def _gene_list(body: str, question: str) -> str | None:
    first = body.splitlines()[0] if body else ""
    candidates = _candidates(first, question)
    return ", ".join(candidates) if candidates else None


def _band_list(body: str, question: str) -> str | None:
    bands = list(dict.fromkeys(BAND.findall(body)))
    return ", ".join(bands) if bands else None


_EXTRACTORS = {
    "chromosome": _chromosome,
    "range": _range,
    "yes/no": _yes_no,
    "species": _species,
    "symbol": _symbol,
    "gene list": _gene_list,
    "band list": _band_list,
}


EXTRACT_PROMPT = """Extract the final answer from a response to a genomics question.
Reply with the answer only, in this form: {form}. If the response gives no answer, \
reply NONE.

Question: {question}
Response: {answer}
Answer:"""
FORMS = {
    "chromosome": "chr followed by the chromosome, e.g. chr8",
    "range": "chromosome:start-end, e.g. chr15:91950805-91950932",
    "yes/no": "Yes or No",
    "species": "the common name, one of " + ", ".join(COMMON_NAMES),
    "symbol": "the official gene symbol, e.g. PSMB10",
    "gene list": "gene symbols separated by comma and space, e.g. KRT12, KRT3",
    "band list": "cytogenetic bands separated by comma and space, e.g. 12q13.11, 7q34",
}


class ModelExtractor:
    """The optional model-based extractor: a model from the registry (through the
    response cache) states the bare answer; bare texts are left alone as by the rules."""

    def __init__(self, name: str, model_spec: dict, cache=None, max_tokens: int = 48):
        from ..models import create_model

        self.name = name
        self.model = create_model(model_spec, cache=cache)
        self.max_tokens = max_tokens

    def identity(self) -> dict:
        return {"extractor": self.name, **self.model.identity()}

    def __call__(self, task: str, text: str | None, question: str = "") -> str | None:
        from ..models import ask

        if not text or is_bare(task, text):
            return text
        prompt = EXTRACT_PROMPT.format(
            form=FORMS[task_type(task)], question=question, answer=text.strip()
        )
        reply = ask(self.model, prompt, question, "extract", self.max_tokens).strip()
        return text if not reply or reply.upper() == "NONE" else reply
