"""Scorers for answers that are sets of items.

List answers (BioRAGent's genes for a disease or phenotype, diseases for a
phenotype, chromosome bands): the gold's items are its text split on ``,``, or on
``;`` for the lists of disease names (:data:`SEMICOLON_LISTS`: the names hold
commas). The answer (the text after its last ``Answer:``) is split the same way and
on line breaks and list bullets; in a ``,`` list an item that is not a gold item
whole is split once more on " and " ("PFKL and PFKM"; "D-lactate and D-glycerate
dehydrogenase" stays one name where the gold has it). Items are compared
case-insensitively, whole, after collapsing whitespace and trimming quotes and
punctuation at their ends.

- ``list_recall``: gold items named / gold items.
- ``list_precision``: items named that are gold / items named (0 when none).

Gene and protein names (GeneTuring 2025's Gene name extraction; golds split on
``,``): ``names_recall``, ``names_precision`` and ``names_f1`` as above, each gold
name a whole item. A gold of ``No gene`` scores 1 on all three when the answer
names none ("No gene", "none", "no genes or proteins", or nothing), else 0.
"""

from __future__ import annotations

import re

from .strict import after_last_answer

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", re.MULTILINE)
_TRIM = "\"'`.,;:()[]{}* "
NO_NAMES = re.compile(r"^(?:no|none|n/?a)\b", re.IGNORECASE)


# Tasks whose items are disease names: separated by ";".
SEMICOLON_LISTS = frozenset({"phenotype_disease_association"})


def separator_of(task: str) -> str:
    return ";" if task in SEMICOLON_LISTS else ","


def gold_items(gold, separator: str = ",") -> list[str]:
    """A gold as its items: a list as it is, a text split on ``separator``."""
    if isinstance(gold, list):
        return [str(g).strip() for g in gold if str(g).strip()]
    return [item.strip() for item in gold.split(separator) if item.strip()]


def _key(item: str) -> str:
    return " ".join(item.split()).strip(_TRIM).casefold()


def answer_items(answer: str | None, separator: str = ",", golds=frozenset()) -> list[str]:
    """The items an answer names, split as the module docstring says (``golds``: the
    gold's items as compared, kept whole)."""
    body = _BULLET.sub("", after_last_answer(answer))
    items = []
    for item in re.split(r"[;\n]" if separator == ";" else r"[,;\n]", body):
        item = _key(item)
        if separator == "," and item not in golds:
            items += [_key(part) for part in re.split(r"\band\b", item)]
        else:
            items.append(item)
    return [item for item in items if item]


def _recall_precision(task: str, answer: str | None, gold) -> tuple[float, float]:
    separator = separator_of(task)
    golds = {_key(g) for g in gold_items(gold, separator)}
    named = set(answer_items(answer, separator, golds))
    hits = len(golds & named)
    return hits / len(golds) if golds else 0.0, hits / len(named) if named else 0.0


def list_recall(task: str, answer: str | None, gold, question: str = "") -> float | None:
    return _recall_precision(task, answer, gold)[0]


def list_precision(task: str, answer: str | None, gold, question: str = "") -> float | None:
    return _recall_precision(task, answer, gold)[1]


def _names(task: str, answer: str | None, gold) -> tuple[float, float, float]:
    """(recall, precision, F1) of the names an answer gives against the gold's."""
    if isinstance(gold, str) and gold.strip().casefold() == "no gene":
        named = answer_items(answer)
        none = not named or bool(NO_NAMES.match(named[0])) and len(named) == 1
        return (1.0, 1.0, 1.0) if none else (0.0, 0.0, 0.0)
    recall, precision = _recall_precision(task, answer, gold)
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return recall, precision, f1


def names_recall(task: str, answer: str | None, gold, question: str = "") -> float | None:
    return _names(task, answer, gold)[0]


def names_precision(task: str, answer: str | None, gold, question: str = "") -> float | None:
    return _names(task, answer, gold)[1]


def names_f1(task: str, answer: str | None, gold, question: str = "") -> float | None:
    return _names(task, answer, gold)[2]
