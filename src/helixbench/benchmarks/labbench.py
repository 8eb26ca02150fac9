"""LAB-Bench's database questions (DbQA: 10 subtasks, 520 public questions), sequence
questions (SeqQA: 15 subtasks, 600) and cloning scenarios (33), as FutureHouse
published them: one JSON object a line (``id``, ``question``, ``ideal``,
``distractors``), read from ScienceOne-AI/ScienceEval's pinned copy of the public
split. Each is a multiple-choice question: the ideal answer, its distractors and the
refusal choice :data:`REFUSAL`, in that (canonical) order; a method presents them
in the order its prompt variant draws (:mod:`helixbench.methods.choices`). Scored by
accuracy, precision (right among answered) and coverage (answered among asked): per
subtask, per part and over all of LAB-Bench a run asked, each part's and the whole's
pooled over its questions as LAB-Bench and inspect_evals report them (besides the
mean of the subtasks' means, as every benchmark has).
A subtask is named by its file (``dga_task``, ``ORF-seq-AAid``); SeqQA's are grouped
by the family their name starts with."""

from __future__ import annotations

from pathlib import PurePosixPath

from ..datasets.jsonfiles import read_jsonl
from ..datasets.questions import Question
from ..datasets.upstream import listdir
from . import Benchmark

REPO = "ScienceOne-AI/ScienceEval"
COMMIT = "1683e4987bab03b706307b5cb9b4a46e8fed5e89"
FOLDER = "benchmarks/LAB-Bench/"
# The refusal choice inspect_evals adds to every question (FutureHouse's own code
# words it without the full stop, :mod:`helixbench.methods.choices`).
REFUSAL = "Insufficient information to answer the question."
SCORERS = ("accuracy", "precision", "coverage")
LICENCE = "CC BY-SA 4.0 (FutureHouse's LAB-Bench; ScienceOne-AI/ScienceEval LICENSE)"
CITATION = (
    "LAB-Bench: Laurent, Janizek, Ruzo, Hinks, Hammerling, Narayanan, Ponnapati, White and "
    "Rodriques, LAB-Bench: measuring capabilities of language models for biology research, "
    f"arXiv 2407.10362 (2024); public split as {REPO} @ {COMMIT[:12]} holds it, {FOLDER}{{}}"
)


def subtask_files(part: str) -> dict:
    """A part's public files (``DbQA``, ``SeqQA``, ``CloningScenarios``) by subtask name,
    in file-name order (the order FutureHouse's code reads them in)."""
    files = listdir(REPO, COMMIT, f"{FOLDER}{part}/")
    public = sorted((f for f in files if f.path.endswith("-v1-public.jsonl")), key=lambda f: f.path)
    return {PurePosixPath(f.path).name.removesuffix("-v1-public.jsonl"): f for f in public}


def load(benchmark: str, files: dict, local) -> list[Question]:
    questions = []
    for task, file in files.items():
        for index, row in enumerate(read_jsonl(local(file))):
            choices = [row["ideal"], *row["distractors"], REFUSAL]
            questions.append(
                Question.at(
                    benchmark,
                    task,
                    index,
                    row["question"],
                    row["ideal"],
                    source_id=row["id"],
                    choices=choices,
                )
            )
    return questions


def _benchmark(name: str, part: str, order: int, modules) -> Benchmark:
    files = subtask_files(part)
    return Benchmark(
        name=name,
        label=f"LAB-Bench {part}",
        order=order,
        files=tuple(files.values()),
        modules=modules(list(files)),
        load=lambda local: load(name, files, local),
        scorers=dict.fromkeys(files, SCORERS),
        primary="accuracy",
        in_bank=True,
        pooled=True,
        multiple_choice=True,
        family="labbench",
        citation=CITATION.format(part),
        licence=LICENCE,
    )


def _families(tasks: list[str]) -> dict[str, tuple[str, ...]]:
    """SeqQA's subtasks by the family their name starts with (ORF, PCR, Prop, RE)."""
    families: dict[str, tuple[str, ...]] = {}
    for task in tasks:
        family = task.split("-", 1)[0]
        families[family] = (*families.get(family, ()), task)
    return families


BENCHMARKS = (
    _benchmark("labbench-dbqa", "DbQA", 60, lambda tasks: {"": tuple(tasks)}),
    _benchmark("labbench-seqqa", "SeqQA", 61, _families),
    _benchmark("labbench-cloning", "CloningScenarios", 62, lambda tasks: {"": tuple(tasks)}),
)
