"""LABBench2 (FutureHouse / Edison Scientific, 2026, CC BY-SA 4.0: the successor of
LAB-Bench), its questions as its paper's runs published them.

The dataset itself (questions, ideal answers, the files they come with, the
validators' parameters) is on a hub and not pinned; what is pinned is its paper's
reports (``assets/reports_paper/<tag>/<mode>/<system>.json``): every question of a
tag asked in a mode, with its text as the system saw it (files injected into it in
``inject`` mode, an instruction to retrieve them in ``retrieve`` mode) cut at 2,000
characters, and its expected output. A report names every question of its tag and
mode, as a case or as a failure (which carries no expected output): the question
list is every report's, each question's expected output from any report that
completed it.

A task is a tag in a mode (``seqqa2/retrieve``, 19 of them); each question keeps its
type (``gc_content``, ``gibson`` ...) and what asking it needs (:data:`NEEDS`): the
questions whose text is complete and that need no attachment are askable by any
model and method (database lookups, literature and web searches, code on an
injected sequence); the others (a file mode's attachments, figures and tables,
cloning's references, a text the report cut) need the hub's files, and are asked
only by imported runs, which answered them there. Scored three ways
(:mod:`helixbench.scoring.labbench2`): LABBench2's own verdict as published, where
one exists; helixbench's deterministic scorers where an answer has one right value;
and a judge with LABBench2's own prompts."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from ..datasets.jsonfiles import read_json
from ..datasets.questions import NEEDS_FILES, Question
from ..datasets.upstream import listdir, lookup
from . import Benchmark

REPO = "EdisonScientific/labbench2"
COMMIT = "3bb6ec31e623c4d981f697ac7ea57e0bbd3dfed1"
REPORTS = "assets/reports_paper/"
PROMPTS = lookup(REPO, "evals/prompts.py", COMMIT)  # its judges' prompts
SUMMARIZE = lookup(REPO, "evals/summarize_report.py", COMMIT)  # its aggregates
VALIDATORS = "src/labbench2/seqqa2/"  # its programmatic graders (their default tolerances)
# What asking a task's questions needs beside their text; a task not named here (or a
# question whose text a report cut) needs the hub's files: attachments, figures,
# tables, cloning's references.
NEEDS = {
    "dbqa2/inject": "database lookups",
    "litqa3/inject": "a literature search",
    "patentqa/inject": "a patent search",
    "trialqa/inject": "a clinical-trial registry search",
    "sourcequality/inject": "a literature search",
    "seqqa2/retrieve": "sequence retrieval and code",
    "seqqa2/inject": "code",
}
CUT_AT = 2000  # a report keeps this much of a question's text (and of an answer)
SCORERS = ("labbench2", "lb2_value", "lb2_judge", "lb2_published")
LICENCE = "CC BY-SA 4.0 (EdisonScientific/labbench2 LICENSE)"
CITATION = (
    "LABBench2: FutureHouse and Edison Scientific, LABBench2 (2026), the paper's runs as "
    f"{REPO} @ {COMMIT[:12]} publishes them ({REPORTS})"
)


def report_files() -> dict[str, list]:
    """Task (``tag/mode``) -> its pinned reports, in path order."""
    found: dict[str, list] = {}
    for file in listdir(REPO, COMMIT, REPORTS):
        tag, mode, _ = PurePosixPath(file.path).relative_to(REPORTS).parts
        found.setdefault(f"{tag}/{mode}", []).append(file)
    return found


def needs(task: str, text: str) -> str:
    """What asking a question needs (:data:`NEEDS`), or the hub's files."""
    if len(text) >= CUT_AT and text.endswith("..."):  # (the report cut it)
        return NEEDS_FILES
    return NEEDS.get(task, NEEDS_FILES)


def rows_of(report: dict) -> list[dict]:
    """A report's questions: its cases and its failures."""
    return [*report.get("cases", []), *report.get("failures", [])]


def load(files: dict, local) -> list[Question]:
    questions = []
    for task, reports in files.items():
        rows: dict[str, dict] = {}
        for report in reports:
            for row in rows_of(read_json(local(report))):
                if row["id"] not in rows or "expected_output" not in rows[row["id"]]:
                    rows[row["id"]] = row  # (a case, with its expected output, over a failure)
        for index, question_id in enumerate(sorted(rows)):  # (ids: an order no run decides)
            row = rows[question_id]
            questions.append(
                Question.at(
                    "labbench2",
                    task,
                    index,
                    row["question"],
                    expected(row),
                    source_id=question_id,
                    subtype=row.get("type") or None,
                    needs=needs(task, row["question"]),
                )
            )
    return questions


def expected(row: dict) -> str:
    """A case's expected output as text ("" where no report completed the question)."""
    value = row.get("expected_output")
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _benchmark() -> Benchmark:
    files = report_files()
    modules: dict[str, tuple[str, ...]] = {}
    for task in files:
        modules[task.split("/")[0]] = (*modules.get(task.split("/")[0], ()), task)
    return Benchmark(
        name="labbench2",
        label="LABBench2",
        order=70,
        files=(*(f for reports in files.values() for f in reports), PROMPTS, SUMMARIZE),
        modules=modules,
        load=lambda local: load(files, local),
        scorers=dict.fromkeys(files, SCORERS),
        imported_only=tuple(task for task in files if task not in NEEDS),
        primary="labbench2",
        in_bank=True,
        citation=CITATION,
        licence=LICENCE,
    )


BENCHMARKS = (_benchmark(),)
