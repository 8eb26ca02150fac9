"""The upstream (GeneGPT evaluate.py) scorer: edge cases and the paper's numbers."""

from __future__ import annotations

import pytest

from helixbench.benchmarks import tasks_of
from helixbench.scoring import get_scorer
from helixbench.scoring.genegpt import genegpt_score
from helixbench.sources.recordings import load_recording

# reference.md section 3: upstream evaluator on the recorded runs.
REFERENCE = {
    "001001": {
        "Gene alias": 0.84,
        "Gene name conversion": 1.0,
        "Gene SNP association": 1.0,
        "Gene location": 0.66,
        "SNP location": 0.98,
        "Gene disease association": 0.6613333,
        "Protein-coding genes": 1.0,
        "Human genome DNA aligment": 0.44,
        "Multi-species DNA aligment": 0.88,
    },
    "111111": {
        "Gene alias": 0.80,
        "Gene name conversion": 1.0,
        "Gene SNP association": 1.0,
        "Gene location": 0.62,
        "SNP location": 1.0,
        "Gene disease association": 0.761,
        "Protein-coding genes": 0.76,
        "Human genome DNA aligment": 0.44,
        "Multi-species DNA aligment": 0.86,
    },
}


@pytest.mark.parametrize(
    "task, answer, gold, score",
    [
        ("Gene location", "Answer: chr8", "chr8", 1.0),
        ("Gene location", "It is on chromosome 8", "chr8", 1.0),  # last token, chr prepended
        ("Gene location", "8q21", "chr8", 0.0),
        ("SNP location", "", "chr13", 0.0),  # empty answer: no crash, no credit
        ("SNP location", "chrX", "chrX", 1.0),
        ("Gene alias", "Answer: PSMB10", "PSMB10", 1.0),
        ("Gene alias", "  PSMB10\n", "PSMB10", 1.0),
        ("Gene alias", "psmb10", "PSMB10", 0.0),  # case matters upstream
        ("Gene alias", "lengthError", "PSMB10", 0.0),
        ("Gene alias", None, "PSMB10", 0.0),  # no answer at all (a replay miss)
        ("Gene disease association", "Answer: KRT12, KRT3", "KRT12, KRT3", 1.0),
        ("Gene disease association", "KRT12", "KRT12, KRT3", 0.5),
        ("Gene disease association", "KRT12X, KRT3", "KRT12, KRT3", 0.5),  # whole elements only
        ("Gene disease association", "KRT12,KRT3", "KRT12, KRT3", 0.0),  # split on ", " only
        ("Disease gene location", "21q22.3, 1p36", ["21q22.3"], 1.0),
        ("Disease gene location", "21q22", ["21q22.3"], 0.0),
        ("Disease gene location", "Answer: 1p36, 2q11", ["1p36", "2q11", "3p21"], 2 / 3),
        ("Protein-coding genes", "Answer: Yes", "TRUE", 1.0),
        ("Protein-coding genes", "No", "NA", 1.0),
        ("Protein-coding genes", "Yes.", "TRUE", 0.0),
        ("Multi-species DNA aligment", "Answer: Caenorhabditis elegans", "worm", 1.0),
        ("Multi-species DNA aligment", "worm", "worm", 1.0),
        ("Multi-species DNA aligment", "Zebrafish (Danio rerio)", "zebrafish", 0.0),
        ("Human genome DNA aligment", "chr15:91950805-91950932", "chr15:91950805-91950932", 1.0),
        ("Human genome DNA aligment", "Answer: chr15:1-100", "chr15:91950805-91950932", 0.5),
        ("Human genome DNA aligment", "chr8:7081648-7081782", "chr15:91950805-91950932", 0.0),
    ],
)
def test_upstream_rules(task, answer, gold, score):
    assert genegpt_score(task, answer, gold) == pytest.approx(score)


def test_hand_judged_tasks_are_not_scored():
    assert genegpt_score("SNP gene function", "ncRNA", "ncRNA") is None
    assert genegpt_score("sequence gene alias", "SLC38A6", ["SLC38A6"]) is None
    with pytest.raises(KeyError, match="unknown scorer 'nope'"):
        get_scorer("nope")


@pytest.mark.parametrize("mask", ["001001", "111111"])
def test_recorded_final_answers_reproduce_reference(recording, mask):
    for task in tasks_of("geneturing"):
        items = load_recording(recording("geneturing", mask, task))
        mean = sum(genegpt_score(task, i.final_text, i.gold) for i in items) / len(items)
        assert round(mean, 7) == pytest.approx(REFERENCE[mask][task], abs=1e-9), task
    macro = sum(REFERENCE[mask].values()) / 9
    assert round(macro, 2) == {"001001": 0.83, "111111": 0.80}[mask]


def test_genehop_disease_gene_location(recording):
    items = load_recording(recording("genehop", "101110", "Disease gene location"))
    mean = sum(genegpt_score("Disease gene location", i.final_text, i.gold) for i in items) / 50
    assert round(mean, 7) == pytest.approx(0.6716667, abs=1e-9)
