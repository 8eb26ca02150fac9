"""Scorers for answers that are sequences (GeneTuring 2025's Amino acid translation
and DNA sequence extraction).

The sequence in an answer: the text after its last ``Answer:`` (the whole text if
none), split on whitespace; tokens lose surrounding punctuation and quotes; a token
of at least :data:`MIN_LETTERS` letters, all of the gold's alphabet (nucleotides
where the gold is one, else amino acids with ``*`` for a stop), counts as sequence,
shorter ones as prose; the longest run of consecutive sequence tokens, joined (a
sequence wrapped over lines, as FASTA writes it), upper-cased, ``*`` dropped.

- ``sequence_exact``: 1 when that sequence equals the gold (normalised alike), else 0.
- ``sequence_identity``: the identity of its global alignment with the gold
  (Biopython's ``PairwiseAligner``: match 1, mismatch -1, gap open -2, extend -0.5):
  identical columns / alignment columns, in [0, 1]; 0 without a sequence.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .strict import after_last_answer

NUCLEOTIDES = frozenset("ACGTUN")
AMINO_ACIDS = frozenset("ACDEFGHIKLMNPQRSTVWYXBZUO*")
MIN_LETTERS = 10
_TRIM = "\"'`.,;:()[]{}<>"


def _alphabet(gold: str) -> frozenset:
    letters = set(normalise_sequence(gold))
    return NUCLEOTIDES if letters <= NUCLEOTIDES else AMINO_ACIDS


def normalise_sequence(text: str) -> str:
    return re.sub(r"[^A-Za-z]", "", text or "").upper()


def sequence_in(answer: str | None, gold: str) -> str:
    """The sequence an answer gives (see the module docstring), or ""."""
    body = after_last_answer(answer)
    alphabet = _alphabet(gold)
    best, run = "", ""
    for token in body.split():
        token = token.strip(_TRIM).upper()
        if len(token) >= MIN_LETTERS and set(token) <= alphabet:
            run += token
            best = max(best, run, key=len)
        else:
            run = ""
    return best.replace("*", "")


def sequence_exact(task: str, answer: str | None, gold, question: str = "") -> float | None:
    if not isinstance(gold, str):
        return None
    found = sequence_in(answer, gold)
    return float(bool(found) and found == normalise_sequence(gold))


@lru_cache(maxsize=1)
def _aligner():
    from Bio.Align import PairwiseAligner

    return PairwiseAligner(
        mode="global",
        match_score=1.0,
        mismatch_score=-1.0,
        open_gap_score=-2.0,
        extend_gap_score=-0.5,
    )


def sequence_identity(task: str, answer: str | None, gold, question: str = "") -> float | None:
    if not isinstance(gold, str):
        return None
    found, target = sequence_in(answer, gold), normalise_sequence(gold)
    if not found or not target:
        return 0.0
    alignment = _aligner().align(target, found)[0]
    return alignment.counts().identities / alignment.length
