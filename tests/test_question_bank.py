"""GeneTuring 2025 and BioRAGent: the question table from the pinned files, the overlap
with GeneTuring (2023) and GeneHop, the scorers of the new tasks on known answers, and
questions asked once for two benchmarks."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from helixbench.benchmarks import load_all, tasks_of
from helixbench.datasets.overlap import link_overlaps
from helixbench.datasets.questions import Question, csv_rows, table_questions
from helixbench.datasets.selection import answered_by, run_questions, sample_questions
from helixbench.report.tables.question_bank import gold_differences, overlap_summary
from helixbench.scoring import DEFAULT_SCORING, PLAIN_SCORERS, scorers_for
from helixbench.scoring.genegpt import genegpt_score
from helixbench.scoring.labels import tf_label, yes_no
from helixbench.scoring.lists import (
    list_precision,
    list_recall,
    names_f1,
    names_precision,
    names_recall,
)
from helixbench.scoring.sequence import sequence_exact, sequence_identity, sequence_in
from helixbench.scoring.strict import strict_score


@pytest.fixture(scope="module")
def table(mirror):
    return load_all(lambda file: mirror / file.relpath)


def test_the_question_table_holds_both_benchmarks(table):
    count = Counter((q.benchmark, q.task) for q in table)
    assert sum(n for (b, _), n in count.items() if b == "geneturing2025") == 1600
    assert {n for (b, _), n in count.items() if b == "geneturing2025"} == {100}
    assert [t for (b, t) in count if b == "geneturing2025"] != []
    assert set(tasks_of("geneturing2025")) == {t for (b, t) in count if b == "geneturing2025"}
    assert sum(n for (b, _), n in count.items() if b == "bioragent") == 899
    assert count["bioragent", "BioASQ_yesno"] == 199
    assert count["bioragent", "SNP_gene_function"] == 50  # 61 rows, 11 without a question
    assert set(tasks_of("bioragent")) == {t for (b, t) in count if b == "bioragent"}
    by_id = {q.id: q for q in table}
    assert len(by_id) == len(table)  # stable, unique ids
    first = by_id["geneturing2025.gene-alias.000"]
    assert (first.text, first.gold) == ("The official gene symbol of gene LMP10 is", "PSMB10")
    asq = by_id["bioragent.bioasq-yesno.000"]
    assert asq.source_id == "54db1d580f63c58e6e000005" and asq.gold == "yes"
    # A multi-line gold keeps its lines; the outer whitespace goes.
    hbb = by_id["bioragent.protein-function.000"]
    assert "\n" in hbb.gold and hbb.gold == hbb.gold.strip()


def test_a_csv_with_trailing_commas_and_empty_rows(tmp_path):
    path = tmp_path / "SNP_gene_function.csv"
    path.write_text(
        "\ufeffquestion,Goldstandard,\n"
        "What is the function of the gene associated with SNP rs1? ,ncRNA,\n"
        ",,\n"
        '"What is the function of the gene associated with SNP rs2?","Line one.\nLine two.",'
        "model text\n"
    )
    questions = table_questions(
        "bioragent",
        [
            ("SNP_gene_function", r["question"], r["Goldstandard"], r.get("id"))
            for r in csv_rows(path)
        ],
    )
    assert [(q.id, q.text, q.gold) for q in questions] == [
        (
            "bioragent.snp-gene-function.000",
            "What is the function of the gene associated with SNP rs1?",
            "ncRNA",
        ),
        (
            "bioragent.snp-gene-function.001",
            "What is the function of the gene associated with SNP rs2?",
            "Line one.\nLine two.",
        ),
    ]


def test_overlap_as_the_files_show_it(table):
    kinds = Counter((q.benchmark, q.task, q.overlap) for q in table if q.overlap)
    for task in ("gene_alias", "gene_location", "SNP_location", "gene_SNP_association"):
        assert kinds["bioragent", task, "verbatim"] == 50
    assert kinds["bioragent", "gene_disease_association", "verbatim"] == 50
    assert kinds["bioragent", "SNP_gene_function", "instruction dropped"] == 50
    assert kinds["bioragent", "disease_gene_location", "instruction dropped"] == 50
    assert sum(n for (b, _, k), n in kinds.items() if b == "geneturing2025") == 450
    by_id = {q.id: q for q in table}
    alias = by_id["geneturing2025.gene-alias.000"]
    assert by_id[alias.overlap_id].text == "What is the official gene symbol of LMP10?"
    # Each GeneTuring item is matched once, in the task of the same name.
    targets = [q.overlap_id for q in table if q.overlap == "rephrased"]
    assert len(set(targets)) == 450
    assert all(
        by_id[t].task == by_id[q].task
        for q, t in ((q.id, q.overlap_id) for q in table if q.overlap == "rephrased")
    )
    differing = gold_differences(table)
    assert Counter((r["task"], r["same_items"]) for r in differing) == {
        ("disease_gene_location", False): 13,  # BioRAGent lists fewer bands
        ("Gene disease association", True): 1,  # NEU1 written twice
    }
    assert overlap_summary(table)[1].endswith("new: 549; differing golds: 13")


def _q(benchmark, task, index, text, gold="x"):
    return Question(f"{benchmark}.{task}.{index:03d}", benchmark, task, task, index, text, gold)


def test_the_rephrasing_rule_comes_from_the_templates_not_from_a_table():
    """A made-up task: the entity is what the task's templates leave; ambiguous or
    unmatched items stay new."""
    old = [
        _q("geneturing", "Toy", 0, "Which pathway holds WNT5A?"),
        _q("geneturing", "Toy", 1, "Which pathway holds TP53?"),
        _q("geneturing", "Toy", 2, "Which pathway holds KRAS?"),
    ]
    new = [
        _q("geneturing2025", "Toy", 0, "The pathway that holds TP53 is"),
        _q("geneturing2025", "Toy", 1, "The pathway that holds BRCA2 is"),
        _q("geneturing2025", "Toy", 2, "The pathway that holds KRAS is"),
        _q("geneturing2025", "Toy", 3, "The pathway that holds KRAS is, again"),
        _q("bioragent", "toy", 0, "Which  pathway holds   WNT5A?"),
    ]
    linked = {q.id: q for q in link_overlaps(old + new, ["geneturing2025", "bioragent"])}
    assert (
        linked["geneturing2025.Toy.000"].overlap_id,
        linked["geneturing2025.Toy.000"].overlap,
    ) == (
        "geneturing.Toy.001",
        "rephrased",
    )
    assert linked["geneturing2025.Toy.001"].overlap is None  # a new item
    assert linked["geneturing2025.Toy.002"].overlap is None  # KRAS twice: not one to one
    assert linked["bioragent.toy.000"].overlap == "verbatim"


def test_a_question_asked_for_two_benchmarks_is_asked_once():
    original = _q("geneturing", "Gene alias", 0, "What is the official gene symbol of LMP10?")
    copy = Question(
        "bioragent.gene-alias.000", "bioragent", "gene_alias", "gene-alias", 0,
        original.text, "PSMB10", overlap_id=original.id, overlap="verbatim",
    )  # fmt: skip
    rephrased = Question(
        "geneturing2025.gene-alias.000", "geneturing2025", "Gene alias", "gene-alias", 0,
        "The official gene symbol of gene LMP10 is", "PSMB10",
        overlap_id=original.id, overlap="rephrased",
    )  # fmt: skip
    questions = [original, copy, rephrased]
    tasks = [
        {"benchmark": "geneturing", "task": "Gene alias"},
        {"benchmark": "bioragent", "task": "gene_alias"},
        {"benchmark": "geneturing2025", "task": "Gene alias"},
    ]
    both = {"tasks": tasks}
    assert [q.id for _, q in run_questions(questions, both)] == [original.id, rephrased.id]
    assert answered_by(questions, both) == {copy.id: original.id}
    alone = {"tasks": tasks[1:]}  # without GeneTuring the copy is asked
    assert [q.id for _, q in run_questions(questions, alone)] == [copy.id, rephrased.id]
    assert answered_by(questions, alone) == {}


def test_samples_of_two_benchmarks_take_the_same_shared_items(table):
    alias = [q for q in table if q.benchmark == "geneturing" and q.task == "Gene alias"]
    copies = [q for q in table if q.benchmark == "bioragent" and q.task == "gene_alias"]
    chosen = sample_questions(alias, 3)
    assert [q.overlap_id for q in sample_questions(copies, 3)] == [q.id for q in chosen]


# -- scorers -----------------------------------------------------------------------


def test_every_gold_scores_full_marks_on_its_tasks_scorers(table):
    for q in table:
        if q.benchmark not in ("geneturing2025", "bioragent"):
            continue
        for name in scorers_for(q.task, DEFAULT_SCORING):
            if name in PLAIN_SCORERS:
                assert PLAIN_SCORERS[name](q.task, q.gold, q.gold, q.text) == 1.0, (q.id, name)


def test_tasks_that_ask_what_geneturing_asks_take_its_rules():
    assert genegpt_score("Human genome DNA aligment programming", "chr15:1-2", "chr15:9-10") == 0.5
    assert genegpt_score("Multi-species DNA aligment programming", "Danio rerio", "zebrafish") == 1
    assert genegpt_score("SNP_location", "Answer: 13", "chr13") == 1.0
    assert strict_score("gene_alias", "Answer: PSMB10.", "PSMB10") == 1.0
    assert genegpt_score("phenotype_gene_location", "20q11.22, 1p36", "20q11.22") == 1.0
    assert genegpt_score("Protein-coding genes", "Answer: No", "NA") == 1.0  # yes/no/NA
    assert genegpt_score("Gene ontology", "x", "x") is None  # not a GeneTuring rule


def test_sequence_scorers():
    protein = "MTSMTQSLREVIKAMTKARNF"
    assert sequence_exact("Amino acid translation", f"Answer: {protein.lower()}*", protein) == 1
    wrapped = "The protein is:\nMTSMTQSLRE\nVIKAMTKARNF\nas translated."
    assert sequence_in(wrapped, protein) == protein  # FASTA-style lines joined, prose left
    assert sequence_exact("Amino acid translation", wrapped, protein) == 1
    assert sequence_exact("Amino acid translation", "I cannot translate this.", protein) == 0
    dna = "ATTCTGCCTTTAGTAATTTGATGACAGAG"
    one_off = dna[:10] + "G" + dna[11:]
    assert sequence_exact("DNA sequence extraction", one_off, dna) == 0
    assert sequence_identity("DNA sequence extraction", one_off, dna) == pytest.approx(28 / 29)
    assert sequence_identity("DNA sequence extraction", dna[:-4], dna) == pytest.approx(25 / 29)
    assert sequence_identity("DNA sequence extraction", "", dna) == 0.0


def test_list_scorers():
    assert list_recall("phenotype_gene_association", "DKK1, HTRA1", "DKK1,HTRA1,RASA1,HMBS") == 0.5
    assert list_precision("phenotype_gene_association", "DKK1, TP53", "DKK1,HTRA1") == 0.5
    assert (
        list_recall("gene_disease_association", "Answer: SLC4A1 and ATP6V0A4", "SLC4A1, ATP6V0A4")
        == 1
    )
    assert list_recall("phenotype_gene_association", "- DKK1\n- HTRA1", "DKK1,HTRA1") == 1
    # Disease names hold commas: those lists are ';'-separated.
    gold = "Hydatidiform mole, recurrent, 1;Idiopathic bronchiectasis"
    answer = "hydatidiform mole, recurrent, 1; Achoo syndrome"
    assert list_recall("phenotype_disease_association", answer, gold) == 0.5
    assert list_precision("phenotype_disease_association", answer, gold) == 0.5
    assert list_precision("phenotype_disease_association", "", gold) == 0.0


def test_gene_name_extraction():
    gold = "Sp1 binding site, embigin gene"
    assert names_recall("Gene name extraction", "Answer: embigin gene", gold) == 0.5
    assert names_precision("Gene name extraction", "embigin gene, CD4", gold) == 0.5
    assert names_f1("Gene name extraction", "embigin gene, Sp1 binding site", gold) == 1.0
    assert names_f1("Gene name extraction", "gB", "gB, gB") == 1.0  # a set
    kept = "D-lactate and D-glycerate dehydrogenase"
    assert names_f1("Gene name extraction", kept, kept) == 1.0
    for none in ("No gene", "Answer: none", "", "No genes or proteins."):
        assert names_f1("Gene name extraction", none, "No gene") == 1.0, none
    assert names_recall("Gene name extraction", "HLA", "No gene") == 0.0
    assert names_f1("Gene name extraction", "No gene", "HLA") == 0.0


def test_label_scorers():
    assert tf_label("TF regulation", "Answer: Repression", "Repression") == 1
    assert tf_label("TF regulation", "ETV4 represses ERBB2.", "Repression") == 1
    assert tf_label("TF regulation", "It activates the gene.", "Activation") == 1
    assert tf_label("TF regulation", "It activates or inhibits it.", "Activation") == 0
    assert tf_label("TF regulation", "Unknown.", "Activation") == 0
    assert yes_no("BioASQ_yesno", "Yes, it is associated.", "yes") == 1
    assert yes_no("BioASQ_yesno", "Answer: no", "yes") == 0
    assert yes_no("BioASQ_yesno", "Studies say yes.", "yes") == 1
    assert yes_no("BioASQ_yesno", "Maybe yes, maybe no.", "no") == 0


def test_the_leaderboard_splits_shared_and_new_items():
    from helixbench.report.tables.question_bank import bank_leaderboard

    old = _q("geneturing", "Gene alias", 0, "old?")
    shared = Question("geneturing2025.a.000", "geneturing2025", "Gene alias", "a", 0, "s", "x",
                      overlap_id=old.id, overlap="rephrased")  # fmt: skip
    new = _q("geneturing2025", "Gene alias", 1, "n")
    questions = {q.id: q for q in (old, shared, new)}
    scores = pd.DataFrame(
        [
            (old.id, "geneturing", "Gene alias", "genegpt", 1.0),
            (shared.id, "geneturing2025", "Gene alias", "genegpt", 0.0),
            (new.id, "geneturing2025", "Gene alias", "genegpt", 1.0),
        ],
        columns=["question_id", "benchmark", "task", "metric", "score"],
    ).assign(run="m / x")

    class FakePlan:  # primary_metric reads the scoring section only
        scoring = DEFAULT_SCORING

    (row,) = bank_leaderboard(FakePlan(), scores, questions).to_dict("records")
    assert (row["macro"], row["shared"], row["new"], row["original"]) == (0.5, 0.0, 1.0, 1.0)
    assert (row["shared_n"], row["new_n"], row["original_n"]) == (1, 1, 1)
