"""The question table: GeneTuring and GeneHop with stable ids, labels and slugs."""

from __future__ import annotations

from collections import Counter

from helixbench.benchmarks import task_by_slug, tasks_of
from helixbench.benchmarks.geneturing import DEMONSTRATION_ITEMS
from helixbench.datasets.questions import (
    load_task_dict,
    read_questions,
    slugify,
    write_questions,
)


def test_question_table(upstream, tmp_path):
    questions = load_task_dict("geneturing", upstream("data/geneturing.json"), DEMONSTRATION_ITEMS)
    questions += load_task_dict("genehop", upstream("data/genehop.json"))
    per_task = Counter((q.benchmark, q.task) for q in questions)
    assert len(per_task) == 12 and set(per_task.values()) == {50}
    assert {t for b, t in per_task if b == "geneturing"} == set(tasks_of("geneturing"))
    assert {t for b, t in per_task if b == "genehop"} == set(tasks_of("genehop"))
    assert len({q.id for q in questions}) == len(questions)
    assert questions[0].id == "geneturing.gene-alias.000"
    assert questions[0].text == "What is the official gene symbol of LMP10?"
    # The four demonstrations are marked, and nothing else.
    demos = {q.demo: (q.task, q.gold) for q in questions if q.demo}
    assert demos == {
        "Dm.1": ("Gene alias", "PSMB10"),
        "Dm.2": ("Gene SNP association", "LINC01270"),
        "Dm.3": ("Gene disease association", "KRT12, KRT3"),
        "Dm.4": ("Human genome DNA aligment", "chr15:91950805-91950932"),
    }
    hop = [q for q in questions if q.task == "Disease gene location"]
    assert isinstance(hop[0].gold, list)
    path = tmp_path / "q.jsonl"
    write_questions(questions, path)
    assert read_questions(path) == questions


def test_slugs_are_unique_and_reversible():
    for benchmark in ("geneturing", "genehop"):
        for task in tasks_of(benchmark):
            assert task_by_slug(benchmark, slugify(task)) == task
    assert slugify("Human genome DNA aligment") == "human-genome-dna-aligment"
