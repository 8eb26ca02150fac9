"""Strict scorers: exact answers after one documented normalisation, no partial luck.

Normalisation (every task): strip, drop a leading ``Answer:`` (any case), collapse
runs of whitespace to one space, drop one trailing full stop. Then per task:

- single answers (gene symbols, ids, chromosomes, coordinates): the whole answer must
  equal the gold, case-sensitively (gene symbols are). A chromosome may be given as
  ``7`` or ``chr7``. Unlike upstream, no last-token rule (``"chr1 or chr2"`` is wrong)
  and no half credit for the right chromosome in the human genome alignment task.
- lists (gene disease association, disease gene location): the answer is split on
  ``,`` ``;`` and `` and ``; the score is the fraction of gold items found among those
  items by exact equality, never by substring (``PSMB1`` does not credit ``PSMB10``).
- yes/no (protein-coding genes): ``yes``/``true`` -> ``TRUE``, ``no``/``false``/``na``
  -> ``NA``, any case.
- species (multi-species alignment): Latin names mapped to the common names upstream
  uses, then compared case-insensitively.

``alias_recall`` scores GeneHop's sequence gene alias as the paper judged it by hand:
the fraction of the gold aliases the answer names, case-insensitively, each alias a
whole item of the answer.
"""

from __future__ import annotations

import re

from .genegpt import LIST_TASKS, LOCATION_TASKS, SCORED_TASKS, SPECIES, rules_of

ANSWER_PREFIX = re.compile(r"^\s*answer\s*:\s*", re.IGNORECASE)
LIST_SEPARATORS = re.compile(r"\s*(?:[,;]|\band\b)\s*")
YES_NO = {"yes": "TRUE", "true": "TRUE", "no": "NA", "false": "NA", "na": "NA"}
ALIAS_SEPARATORS = re.compile(r"[,;/\s]+")
ALIAS_TRIM = "()[]{}\"'`.:"


def normalise_text(answer: str | None) -> str:
    text = ANSWER_PREFIX.sub("", answer or "")
    text = " ".join(text.split())
    return text[:-1] if text.endswith(".") else text


LAST_ANSWER = re.compile(r"answer\s*:", re.IGNORECASE)


def after_last_answer(answer: str | None) -> str:
    """The text after an answer's last ``Answer:`` (any case), else the whole text."""
    parts = LAST_ANSWER.split(answer or "")
    return parts[-1]


def split_list(text: str) -> list[str]:
    return [item for item in LIST_SEPARATORS.split(text) if item]


def strict_score(task: str, answer: str | None, gold, question: str = "") -> float | None:
    task = rules_of(task)
    if task not in SCORED_TASKS:
        return None
    text = normalise_text(answer)
    if task in LIST_TASKS:
        golds = gold.split(", ") if isinstance(gold, str) else list(gold)
        items = set(split_list(text))
        return sum(g in items for g in golds) / len(golds)
    if task in LOCATION_TASKS:
        return float(text == gold or "chr" + text == gold)
    if task == "Protein-coding genes":
        return float(YES_NO.get(text.lower(), text) == gold)
    if task == "Multi-species DNA aligment":
        common = {latin.lower(): name for latin, name in SPECIES.items()}
        return float(common.get(text.lower(), text.lower()) == gold.lower())
    return float(text == gold)


def alias_recall(task: str, answer: str | None, gold, question: str = "") -> float | None:
    if task != "sequence gene alias":
        return None
    golds = [gold] if isinstance(gold, str) else list(gold)
    named = {
        item.strip(ALIAS_TRIM).casefold() for item in ALIAS_SEPARATORS.split(normalise_text(answer))
    }
    return sum(g.casefold() in named for g in golds) / len(golds)
