"""BixBench (FutureHouse, 2025, Apache-2.0): questions on the analysis of real genomics
data, asked zero-shot (without the data), as its published baselines ask them.

Two versions are pinned (``Future-House/BixBench`` @ ``4931118``), each as its runs of
GPT-4o (and, for v1, Claude 3.5 Sonnet) publish them, one CSV a mode:

- **v1** (296 questions, the paper's): ``bixbench_results/baseline_eval_data/``, multiple
  choice with and without the refusal option and open answers. A multiple-choice row
  holds the options as the model saw them (``choices``: a Python list literal of
  ``"(A) ..."``), the right letter (``target``) and the refusal's (``unsure``); a
  question's id is its ``short_qid`` (``bix-1_q1``).
- **v1.5** (205, revised): ``bixbench-v1.5_results/zero_shot_baselines/``, open answers
  with their ``evaluation_mode`` (``str_verifier``, ``range_verifier`` with the target
  as ``(lo,hi)``, ``llm_verifier``); its multiple-choice files hold letters only (no
  option is pinned), so they are imported, never asked.

Multiple choice (benchmark ``bixbench-mcq``) keeps each question's options in the order
GPT-4o's file shows them (:attr:`Question.shown`), asked with BixBench's own prompts
(:mod:`helixbench.methods.choices`, variant ``bixbench``); open answers (``bixbench-open``)
keep their evaluation mode as the question's ``subtype``. The data capsules the agentic
mode analyses (about 19 GB, on a hub) are not pinned: zero-shot is what helixbench asks.
"""

from __future__ import annotations

import ast
import re

from ..datasets.jsonfiles import read_text
from ..datasets.questions import Question
from ..datasets.upstream import lookup
from . import Benchmark

REPO = "Future-House/BixBench"
COMMIT = "49311180bdacb324c596f2e07596c126f2004008"
V1 = (
    "bixbench_results/baseline_eval_data/"
    "bixbench_llm_baseline_refusal_{refusal}_{mode}_{model}_1.0.csv"
)
V15 = "bixbench-v1.5_results/zero_shot_baselines/{model}-grader-{mode}.csv"
AGGREGATES = {  # each version's published figures, per "<model>-grader-<mode>"
    "v1": lookup(REPO, "bixbench_results/zero_shot_baselines.json", COMMIT),
    "v1.5": lookup(REPO, "bixbench-v1.5_results/zero_shot_baselines.json", COMMIT),
}
PROMPTS = lookup(REPO, "bixbench/prompts.py", COMMIT)  # its prompts and its judges'
CODE = [lookup(REPO, p, COMMIT) for p in ("bixbench/graders.py", "bixbench/utils.py")]
CODE += [lookup(REPO, p, COMMIT) for p in ("bixbench/zero_shot.py", "grade_outputs.py")]
REFUSAL = "Insufficient information to answer the question"  # utils.randomize_choices
# task -> (version, the mode as BixBench's aggregates name it)
TASKS = {
    "v1/mcq-refusal": ("v1", "mcq-refusal-True"),
    "v1/mcq": ("v1", "mcq-refusal-False"),
    "v1.5/mcq-refusal": ("v1.5", "mcq-refusal-True"),
    "v1.5/mcq": ("v1.5", "mcq-refusal-False"),
    "v1/open": ("v1", "openended"),
    "v1.5/open": ("v1.5", "openended"),
}
MCQ = ("v1/mcq-refusal", "v1/mcq", "v1.5/mcq-refusal", "v1.5/mcq")
OPEN = ("v1/open", "v1.5/open")
LETTERED = ("v1.5/mcq-refusal", "v1.5/mcq")  # letters only: imported, never asked
OPEN_SCORERS = ("bixbench", "bix_published", "bix_verifier", "bix_judge")
MCQ_SCORERS = ("accuracy", "precision", "coverage")
LICENCE = "Apache-2.0 (Future-House/BixBench LICENSE)"
CITATION = (
    "BixBench: Mitchener, Laurent, Tenmann, Narayanan, Wellawatte, White, Sani and "
    "Rodriques, BixBench: a comprehensive benchmark for LLM-based agents in computational "
    f"biology, arXiv 2503.00096 (2025); zero-shot baselines as {REPO} @ {COMMIT[:7]} "
    "publishes them"
)


def task_path(task: str, model: str) -> str:
    """Where BixBench publishes ``model``'s run of ``task``."""
    version, mode = TASKS[task]
    if version == "v1.5":
        return V15.format(model=model, mode=mode)
    refusal = "False" if mode == "mcq-refusal-False" else "True"
    kind = "openended" if mode == "openended" else "mcq"
    return V1.format(refusal=refusal, mode=kind, model=model)


def _pinned(task: str) -> object:
    return lookup(REPO, task_path(task, "gpt-4o"), COMMIT)


FILES = {task: _pinned(task) for task in TASKS}  # GPT-4o's: the questions' source


def options(row: dict) -> list[str]:
    """A multiple-choice row's options as shown, without their ``(A) `` labels."""
    shown = ast.literal_eval(row["choices"])
    return [re.sub(r"^\([A-Z]\)\s?", "", text, count=1) for text in shown]


def source_id(row: dict) -> str:
    """A question's id in BixBench: v1's ``short_qid`` (its ``uuid`` is the capsule's)."""
    return row.get("short_qid") or row["uuid"]


def _mcq(task: str, index: int, row: dict) -> Question:
    shown = options(row)
    letters = [chr(65 + i) for i in range(len(shown))]
    right = letters.index(row["target"].strip())
    refusal = letters.index(row["unsure"].strip()) if task == "v1/mcq-refusal" else None
    rest = [i for i in range(len(shown)) if i not in (right, refusal)]
    order = [right, *rest, *([refusal] if refusal is not None else [])]  # ours: right first
    return Question.at(
        "bixbench-mcq",
        task,
        index,
        row["question"],
        shown[right],
        source_id=source_id(row),
        choices=[shown[i] for i in order],
        shown=[order.index(i) for i in range(len(shown))],
    )


def load(local) -> list[Question]:
    questions = []
    for task, file in FILES.items():
        rows = csv_rows_of(read_text(local(file), file.sha256))
        for index, row in enumerate(rows):
            if task in LETTERED:  # (no option is pinned: the gold is the file's letter)
                questions.append(
                    Question.at("bixbench-mcq", task, index, row["question"], row["target"],
                                source_id=source_id(row))
                )  # fmt: skip
            elif task in MCQ:
                questions.append(_mcq(task, index, row))
            else:
                mode = row.get("evaluation_mode") or "llm_verifier"  # (v1: all by its judge)
                questions.append(
                    Question.at("bixbench-open", task, index, row["question"], row["target"],
                                source_id=source_id(row), subtype=mode)
                )  # fmt: skip
    return questions


def csv_rows_of(text: str) -> list[dict]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


def _benchmark(name: str, label: str, order: int, tasks: tuple, **fields) -> Benchmark:
    files = tuple(FILES[t] for t in tasks)
    return Benchmark(
        name=name,
        label=label,
        order=order,
        files=(*files, *AGGREGATES.values(), PROMPTS, *CODE) if name == "bixbench-mcq" else files,
        modules={"v1": tuple(t for t in tasks if t.startswith("v1/")),
                 "v1.5": tuple(t for t in tasks if t.startswith("v1.5/"))},
        load=(lambda local: [q for q in load(local) if q.benchmark == name]),
        in_bank=True,
        family="bixbench",
        citation=CITATION,
        licence=LICENCE,
        **fields,
    )  # fmt: skip


BENCHMARKS = (
    _benchmark(
        "bixbench-mcq",
        "BixBench, multiple choice",
        80,
        MCQ,
        scorers=dict.fromkeys(MCQ, MCQ_SCORERS),
        primary="accuracy",
        pooled=True,
        multiple_choice=True,
        choice_variant="bixbench",
        imported_only=LETTERED,
    ),
    _benchmark(
        "bixbench-open",
        "BixBench, open answers",
        81,
        OPEN,
        scorers=dict.fromkeys(OPEN, OPEN_SCORERS),
        primary="bixbench",
        pooled=True,
        choice_variant="bixbench",  # (its open-answer prompt)
    ),
)
