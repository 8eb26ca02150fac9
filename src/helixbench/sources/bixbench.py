"""BixBench's published runs and its grading rules, as its code applies them
(``bixbench/utils.py``, ``bixbench/graders.py``, ``grade_outputs.py`` @ 4931118).

- An answer is what ``parse_response`` cuts from the reply: the text between the first
  ``<answer>`` and ``</answer>``, stripped and upper-cased for multiple choice (with
  no tags its slicing keeps ``text[7:-1]``: "Sorry, but ..." reads "ry, but ...").
- Multiple choice (``str_verifier``): right where the answer and the target are equal
  once everything but letters and digits is dropped and the case folded; refused
  where, not right, the answer is the refusal's letter exactly.
- Open answers: ``str_verifier`` the same equality, then a partial match (the cleaned
  answer inside the cleaned target: an empty answer or "5" against "4.25E-04" is
  right), else BixBench's LLM grader; ``range_verifier`` its LLM range grader (the
  open-answer grader never checks the range itself); ``llm_verifier`` its LLM
  grader. An open answer is never refused (its grade parser knows only correct and
  incorrect), so its coverage is 1.
- A file's ``grade, correct, sure`` columns are ``grade_outputs.py``'s ``(grade,
  correct, refusal)`` tuple: ``sure`` holds the *refused* flag (v1's open-answer files,
  graded before, hold True throughout; the rule above explains their figures).
- Figures: ``compute_metrics``: accuracy = correct / total, precision = correct / (total
  - refused), coverage = (total - refused) / total.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ..datasets.upstream import verified_bytes
from .checks import bixbench_rows

GRADER = "BixBench's grade_outputs.py (its str_verifier; its LLM grader, gpt-4o)"


def clean(text) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "", str(text)).lower()


def parse_response(text: str, mcq: bool) -> str:
    """The answer BixBench's ``parse_response`` cuts from a reply (its slicing kept)."""
    start = text.find("<answer>") + len("<answer>")
    end = text.find("</answer>")
    answer = text[start:end]
    return answer.strip().upper() if mcq else answer


def mcq_grade(predicted: str, target: str, refusal: str | None) -> tuple[bool, bool]:
    """(right, refused) of a multiple-choice answer, as BixBench's str_verifier grades."""
    right = clean(predicted) == clean(target)
    return right, (not right and bool(refusal) and predicted == refusal)


def str_verdict(predicted: str, target: str) -> tuple[bool | None, str]:
    """An open answer by BixBench's str_verifier before its LLM: True where equal or a
    partial match, None where BixBench asks its LLM."""
    ours, theirs = clean(predicted), clean(target)
    if ours == theirs:
        return True, "equal once cleaned"
    if ours in theirs:
        return True, f"partial match: {ours!r} in {theirs!r}" + (" (empty)" if not ours else "")
    return None, "no match: BixBench asks its LLM"


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def range_verdict(predicted: str, target: str) -> tuple[bool | None, str]:
    """An open answer against ``(lo,hi)`` by the numbers it states: right where all lie
    within, wrong where none does, no verdict where it states none or some of each."""
    try:
        low, high = (float(x) for x in ast.literal_eval(target.strip()))
    except (ValueError, SyntaxError, TypeError):
        return None, f"{target!r} is no range"
    found = sorted({float(n) for n in NUMBER.findall(str(predicted).replace(",", ""))})
    inside = [n for n in found if low <= n <= high]
    where = f"[{low:g}, {high:g}]"
    if not found:
        return None, "states no number"
    if len(inside) == len(found):
        return True, f"{', '.join(f'{n:g}' for n in found)} within {where}"
    if not inside:
        return False, f"{', '.join(f'{n:g}' for n in found[:5])} outside {where}"
    return None, f"some of its numbers within {where}, some not"


@dataclass(frozen=True)
class PublishedRow:
    """One question of a published file: the system's reply and answer, BixBench's
    grade of it, and (multiple choice) the letters as the file showed them."""

    question: str
    reply: str | None  # v1's raw reply (llm_response); v1.5 keeps the answer alone
    answer: str | None
    grade: int
    refused: bool
    target: str
    refusal: str | None
    evaluation_mode: str | None


def read_rows(path: Path, sha256: str | None, mcq: bool) -> dict[str, PublishedRow]:
    """A published CSV's rows by question id (v1's ``short_qid``, v1.5's ``uuid``)."""
    rows = {}
    for row in bixbench_rows(Path(path), verified_bytes(path, sha256)):
        key = row.get("short_qid") or row["uuid"]
        refusal = (row.get("unsure") or "").strip() or None
        rows[key] = PublishedRow(
            question=row["question"],
            reply=row.get("llm_response"),
            answer=row.get("predicted"),
            grade=int(float(row["grade"])),
            refused=mcq and row.get("sure", "").strip() == "True",
            target=row["target"],
            refusal=refusal if mcq else None,
            evaluation_mode=row.get("evaluation_mode") or ("llm_verifier" if not mcq else None),
        )
    return rows


def metrics(grades: list[int], refused: list[bool]) -> dict:
    """BixBench's ``compute_metrics``."""
    total, correct = len(grades), sum(grades)
    sure = total - sum(bool(r) for r in refused)
    return {
        "accuracy": correct / total if total else 0,
        "precision": correct / sure if sure else 0,
        "coverage": sure / total if total else 0,
        "n_total": total,
        "n_correct": correct,
        "n_sure": sure,
    }
