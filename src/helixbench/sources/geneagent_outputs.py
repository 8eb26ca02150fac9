"""GeneAgent's published outputs (ncbi-nlp/GeneAgent ``Outputs/``): one text file per
dataset and system, one block per gene set, blocks separated by ``//``.

A block's first line names the set's process after its first ``: `` (``Process:``,
``Updated Process:``, ``Function:``...), as GeneAgent's ``evaluate.ipynb`` reads it;
a block of one line names nothing. The rest is the system's analysis.

**Which block answers which set.** Blocks follow the dataset's row order, but a
file may hold more blocks than the dataset has rows (GPT-4's MSigDB file: 59 for 56
sets): answers to sets that are not in the dataset, or a set answered twice out of
its place. Every analysis names genes of its set, so each row is paired with a
block by an order-keeping alignment that maximises the genes the paired blocks name
from their rows' sets (then the number of pairs); a block paired with no row is an
extra answer, left out and counted. GeneAgent's notebook pairs them by position
(``zip``), which for GPT-4 on MSigDB shifts every set after the 18th; the paper's
figures for that file are reproduced only by the alignment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GENE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-.]*[A-Za-z0-9]")


@dataclass(frozen=True)
class Block:
    name: str | None  # the process the block names (None: it names none)
    text: str  # the whole block, as written


def read_blocks(text: str) -> list[Block]:
    """The blocks of an output file, in order (empty ones dropped)."""
    blocks = []
    for segment in text.split("//"):
        segment = segment.strip()
        if segment:
            blocks.append(Block(block_name(segment), segment))
    return blocks


def block_name(text: str) -> str | None:
    """The process a reply names: what follows the first ``: `` of its first line, in
    a reply of more than one line (as GeneAgent's ``evaluate.ipynb`` reads it)."""
    first, newline, _ = text.strip().partition("\n")
    _, colon, name = first.partition(": ")
    return name.strip() if newline and colon and name.strip() else None


def align(blocks: list[Block], gene_sets: list[list[str]]) -> list[int | None]:
    """For each set (in dataset order), the index of the block that answers it, or
    None: the order-keeping pairing that maximises the set's genes its block names."""
    genes = [set(g) for g in gene_sets]
    every = set().union(*genes) if genes else set()
    named = [set(GENE_TOKEN.findall(b.text)) & every for b in blocks]
    rows, cols = len(genes), len(blocks)
    # best[i][j]: (genes named, pairs) of the best pairing of the first i sets with the
    # first j blocks; compared as tuples, so genes first, then more pairs.
    best = [[(0, 0)] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        for j in range(1, cols + 1):
            overlap = len(genes[i - 1] & named[j - 1])
            pair = best[i - 1][j - 1]
            best[i][j] = max((pair[0] + overlap, pair[1] + 1), best[i - 1][j], best[i][j - 1])
    paired: list[int | None] = [None] * rows
    i, j = rows, cols
    while i and j:
        overlap = len(genes[i - 1] & named[j - 1])
        pair = best[i - 1][j - 1]
        if best[i][j] == (pair[0] + overlap, pair[1] + 1):
            paired[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif best[i][j] == best[i][j - 1]:
            j -= 1
        else:
            i -= 1
    return paired
