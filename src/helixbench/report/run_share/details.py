"""A run's questions for the HTML report's per-question view, in a file of their own.

The index page (``index.html``) stays light at any number of runs: each run's
questions, answers, scores and transcripts are in its ``details.js``, written by its
score job beside its summary (``results/summaries/<model>/<method>/<variant>/``), which
the page loads where it is when the reader picks the run (a ``<script>`` element: static
files, no server, works from ``file://`` and from a web folder serving ``results/``)
and renders as text (``textContent``, never markup). The report refers to these files
and does not copy them: at 10,000 runs they are a gigabyte, more than every table of
the report together.
Snakemake's own report embeds a page without the folder beside it, so the report
also writes the page with every run's file inside it (``index-bundled.html``).

A run's file holds only what is the run's own, a column a field (:func:`packed`): a
question's id, text, task and gold are the same in every run of a report and are in
the page once (:func:`question_facts`); a model call's prompt increment that is the
question's text, or its completion that is the answer, is a flag. At 10,000 runs of
the whole question bank that is about a third of what a row a question took.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
from pathlib import Path

from ... import paths
from ...config.plan import Plan
from ...datasets.jsonfiles import compact_json
from ...scoring import CORRECTNESS_SCORERS
from ..records import ScoreIndex, primary_metric

# One text of the per-question view (an answer, a prompt increment, a completion, a
# tool reply, an agent's stderr): past this it shows its start and says how much is
# left out; the whole text stays in the run's records (results/runs/).
MAX_TEXT_CHARS = 2_000
# The JavaScript function a run's file calls with its data (templates/report.html.j2).
CALLBACK = "helixbenchRun"
# The page with its runs inside (for Snakemake's report), holding at most this many
# bytes of them: the runs past it are read from results/summaries as index.html reads
# them. (16 MB: a hundred runs of the whole question bank, or dozens of GeneGPT
# transcripts; a sweep's page with every run inside would be most of its report.)
BUNDLED_PAGE = "index-bundled.html"
BUNDLED_MAX_BYTES = 16 * 2**20
# gzip's level for a run's file: within 5% of level 9's size at a third of its time.
COMPRESSION = 4


# What of a model call the page never shows (templates/report.html.j2): its prompt's
# digest and size, token counts and finish reason. Left out of the run's file (they
# stay in its records): a digest is 64 characters gzip cannot shrink, a third of a
# no-tools run's file.
UNSHOWN_MODEL_FIELDS = frozenset(
    {"prompt_sha256", "prompt_chars", "continues_previous", "prompt_tokens"}
    | {"completion_tokens", "reused_tokens", "finish_reason"}
)


def page_events(events: list) -> list:
    """A record's events as the page shows them (:data:`UNSHOWN_MODEL_FIELDS` out)."""
    return [_page_event(event) for event in events]


def _page_event(event: dict, repeated: dict | None = None) -> dict:
    """An event as the run's file holds it: a model call without
    :data:`UNSHOWN_MODEL_FIELDS`, and with ``repeated`` ({field: the question's text it
    may repeat}, :data:`REPEATED`) each text that repeats it a flag; any other event as
    it is."""
    data = event.get("data")
    if event.get("type") != "model" or not isinstance(data, dict):
        return event
    flags = [
        field for field, same in (repeated or {}).items() if field in data and data[field] == same
    ]
    shown = {k: v for k, v in data.items() if k not in UNSHOWN_MODEL_FIELDS and k not in flags}
    shown.update((_repeated_flag(field), True) for field in flags)
    return {**event, "data": shown}


def shown_text(value):
    """``value`` as the per-question view shows it: a string past
    :data:`MAX_TEXT_CHARS` cut, with the count of what is left out; anything else as is
    (nested lists and mappings cut inside)."""
    if isinstance(value, (dict, list)) and len(compact_json(value)) <= MAX_TEXT_CHARS:
        # (no string is longer than the JSON that holds it: nothing inside to cut, and
        # one C call in place of a Python call a value)
        return value
    if isinstance(value, str):
        if len(value) <= MAX_TEXT_CHARS:
            return value
        left = len(value) - MAX_TEXT_CHARS
        return f"{value[:MAX_TEXT_CHARS]}\n[... {left:,} more characters in results/runs/]"
    if isinstance(value, dict):
        return {k: shown_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shown_text(v) for v in value]
    return value


# The fields of a question that every run of a report shares (the page's, once) and
# those of a run's own (its file's, a column each).
SHARED_FIELDS = ("task", "text", "gold")
RUN_FIELDS = ("answer", "error", "metric", "score", "status", "type", "header", "events")
# A model call's texts that repeat the question's (a flag in the run's file in place of
# the text: the page puts the text back), by the field of the question they repeat.
REPEATED = {"prompt_increment": "text", "completion": "answer"}


def run_details(
    run: str,
    plan: Plan,
    records: dict,
    scores: ScoreIndex,
    questions: dict,
    labels: dict[tuple[str, str], str],
) -> dict:
    """The run's file's data (:func:`packed`'s form, made in one pass): each question
    of the per-question view a row of its columns, and the prompt headers they cite.
    ``plan``: the run's own (:func:`helixbench.report.run_share.run_summary.spec_plan`)."""
    headers: dict = {}
    columns: dict[str, list] = {"id": [], **{field: [] for field in RUN_FIELDS}}
    add = {field: column.append for field, column in columns.items()}
    for task in plan.tasks:
        metric = primary_metric(plan, task.task)
        of_task = scores.get((run, task.task, metric), {})
        graded = metric not in CORRECTNESS_SCORERS
        for record in records[task]:
            question = questions[record["question_id"]]
            score = of_task.get(question.id)
            kind = labels.get((run, question.id))
            if (run, question.id) in labels:
                status = "wrong"
            elif graded:
                status = "graded"
            else:
                status = "right" if score is not None and score >= 1 else "wrong"
            if record.get("header") is not None:
                headers.setdefault(record["header_sha256"], record["header"])
            answer = shown_text(record["answer"])
            events = shown_text(record["events"])
            shared = {"text": question.text, "answer": answer}
            repeated = {field: shared[same] for field, same in REPEATED.items()}
            add["id"](question.id)
            add["answer"](answer)
            add["error"](record["error"])
            add["metric"](metric)
            add["score"](score)
            add["status"](status)
            add["type"](kind)
            add["header"](record.get("header_sha256"))
            add["events"]([_page_event(event, repeated) for event in events])
    return {"run": run, "headers": headers, "questions": columns}


def _repeated_flag(field: str) -> str:
    return f"{field}_is_{REPEATED[field]}"


def packed(details: dict) -> dict:
    """The run's file's data (:func:`run_details` makes it so) from a row a question
    (:func:`unpacked`'s form): the questions' ids and each of :data:`RUN_FIELDS` as a
    column; the shared fields left to the page; a model call's text that repeats the
    question's (:data:`REPEATED`) a flag."""
    rows = details["questions"]
    columns = {"id": [q["id"] for q in rows]}
    columns.update({field: [q[field] for q in rows] for field in RUN_FIELDS if field != "events"})
    columns["events"] = [_repeats_flagged(q) for q in rows]
    return {"run": details["run"], "headers": details["headers"], "questions": columns}


def _repeats_flagged(question: dict) -> list:
    repeated = {field: question[same] for field, same in REPEATED.items()}
    return [_page_event(event, repeated) for event in question["events"]]


def unpacked(data: dict, facts: dict) -> dict:
    """A run's file (:func:`packed`) as :func:`run_details` made it, with the page's
    ``facts`` (:func:`question_facts`): what the page does in JavaScript."""
    columns = data["questions"]
    shared = {qid: i for i, qid in enumerate(facts["id"])}
    rows = []
    for i, qid in enumerate(columns["id"]):
        at = shared[qid]
        row = {"id": qid, **{field: facts[field][at] for field in SHARED_FIELDS}}
        row.update({field: columns[field][i] for field in RUN_FIELDS})
        row["events"] = [_restored(event, row) for event in row["events"]]
        rows.append(row)
    return {"run": data["run"], "headers": data["headers"], "questions": rows}


def _restored(event: dict, row: dict) -> dict:
    data = event.get("data")
    if event.get("type") != "model" or not isinstance(data, dict):
        return event
    data = dict(data)
    for field, same_as in REPEATED.items():
        if data.pop(_repeated_flag(field), False):
            data[field] = row[same_as]
    return {**event, "data": data}


def question_facts(plan: Plan, questions: dict) -> dict:
    """The shared fields (:data:`SHARED_FIELDS`) of every question of ``plan``'s
    tasks, a column each with the questions' ids: the page holds them once for all its
    runs."""
    asked = {(task.benchmark, task.task) for task in plan.tasks}
    chosen = [q for q in questions.values() if (q.benchmark, q.task) in asked]
    return {
        "id": [q.id for q in chosen],
        "task": [q.task for q in chosen],
        "text": [q.text for q in chosen],
        "gold": [q.gold_text for q in chosen],
    }


def packed_text(data) -> str:
    """``data`` as the page inflates it: gzip-compressed JSON in base64."""
    return base64.b64encode(gzip.compress(compact_json(data), COMPRESSION, mtime=0)).decode()


def opened_in(out_dir: Path) -> Path:
    """The folder a reader opens the page of a report written to ``out_dir`` in:
    :data:`paths.REPORT_DIR` for a config's report under :data:`paths.REPORTS_DIR`
    (the link to it), else ``out_dir`` itself."""
    kept = Path(out_dir).resolve().parent == Path(paths.REPORTS_DIR).resolve()
    return Path(paths.REPORT_DIR) if kept else Path(out_dir)


def details_link(run, folder: Path) -> str:
    """A run's file as the page opened in ``folder`` (:func:`opened_in`) loads it
    (``../summaries/...`` from results/report), each part percent-encoded (a model's
    name may hold any character a URL reserves)."""
    from urllib.parse import quote

    relative = os.path.relpath(run.details_path, folder)
    return "/".join(quote(part) for part in Path(relative).parts)


def inline_run_scripts(plan, max_bytes: int = BUNDLED_MAX_BYTES) -> list[str]:
    """Each run's file as the text of a ``<script>`` inside the page, in the plan's
    order until ``max_bytes``. A run's file is one call with base64 text and the run's
    label, where a ``<`` only stands inside the label's string: written ``\\u003c``, no
    name of a run can end the script."""
    scripts, used = [], 0
    for run in plan.runs:
        text = Path(run.details_path).read_text(encoding="utf-8")
        if used + len(text) > max_bytes:
            continue
        used += len(text)
        scripts.append(text.replace("<", "\\u003c"))
    return scripts


def place_exports(runs, out_dir: Path) -> None:
    """The report's ``exports/`` folder holds exactly the exports of ``runs`` (its runs
    where the config asks for exports; linked, else copied, from ``results/exports``):
    a report shows the runs of the config it was built from, and the runs of other
    configs stay where they are. (A ``runs/`` folder an earlier helixbench copied the
    pages into goes.)"""
    _emptied(out_dir, paths.REPORT_DIR + "/runs")
    exported = _emptied(out_dir, paths.REPORT_EXPORTS_DIR)
    for run in runs:
        shutil.copytree(
            paths.RUN_EXPORTS.format(**run.wildcards),
            exported / run.model / run.method,
            copy_function=_link,
            ignore=shutil.ignore_patterns(".snakemake_timestamp"),  # Snakemake's
        )


def _emptied(out_dir: Path, folder: str) -> Path:
    """The report's copy of ``folder`` (a path under ``results/report``), cleared."""
    target = Path(out_dir) / Path(folder).relative_to(paths.REPORT_DIR)
    shutil.rmtree(target, ignore_errors=True)
    return target


def _link(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, target)


def write_details(path: Path, details: dict) -> None:
    """The run's data as a script that hands it to the page's :data:`CALLBACK`:
    gzip-compressed JSON in base64 (a fifth of the JSON's size on GeneGPT runs; the
    page inflates it with the browser's own DecompressionStream, from ``file://``
    too), and the run's label, so that the page knows which run is on its way."""
    label = json.dumps(details["run"], ensure_ascii=True)  # (ASCII: no U+2028 inside)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f'{CALLBACK}("{packed_text(details)}",{label});\n', encoding="utf-8")
    tmp.replace(path)


def read_details(path: Path) -> dict:
    """A run's file, as :func:`write_details` wrote it, read back."""
    text = Path(path).read_text(encoding="utf-8")
    found = re.fullmatch(rf'{CALLBACK}\("([A-Za-z0-9+/=]*)",(".*")\);\n', text, re.DOTALL)
    if not found:
        raise ValueError(f"{path}: not a run's question file")
    return json.loads(gzip.decompress(base64.b64decode(found.group(1))))
