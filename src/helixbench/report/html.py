"""The self-contained HTML report (``results/report/index.html``): one file with its
styles, script and figures (inline SVG) inside, so it opens from disk with no server
and no network. Rendered with a jinja2 template (``templates/report.html.j2``) with
autoescaping on: model output and tool replies are shown as text, never as markup.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup

from ..scoring import CORRECTNESS_SCORERS
from .text import fmt, fmt_frame

TEMPLATES = Path(__file__).parent / "templates"


def html_table(frame: pd.DataFrame | None) -> Markup:
    """A table as the page shows it: numbers by :func:`fmt`, in a box of its own that
    scrolls sideways when the table is wider than the screen; nothing (a false value,
    so the page leaves the section out) for an empty one."""
    if frame is None or frame.empty:
        return Markup("")
    table = fmt_frame(frame).to_html(index=False, escape=True, border=0)
    return Markup(f'<div class="table-wrap">{table}</div>')


def inline_svg(path: Path) -> Markup:
    text = path.read_text()
    text = re.sub(r"^<\?xml[^>]*>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    return Markup(text)


def prompt_headers(records: dict) -> dict[str, str]:
    """header sha256 -> header text, as the run records log each (once per shard)."""
    headers = {}
    for of_task in records.values():
        for record in of_task:
            if record.get("header") is not None:
                headers.setdefault(record["header_sha256"], record["header"])
    return headers


# A sweep's every transcript would make a page no browser opens: past this many
# questions, whole runs are left out of the per-question view (the page says which;
# their records stay in results/runs/).
MAX_QUESTIONS = 5000
# One text of the per-question view (an answer, a prompt increment, a completion, a
# tool reply, an agent's stderr): past this it shows its start and says how much is
# left out; the whole text stays in the run's records (results/runs/).
MAX_TEXT_CHARS = 20_000


def shown_text(value):
    """``value`` as the per-question view shows it: a string past
    :data:`MAX_TEXT_CHARS` cut, with the count of what is left out; anything else as is
    (nested lists and mappings cut inside)."""
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


def question_items(
    plan, records, scores, questions, labels, primary, limit: int = MAX_QUESTIONS
) -> tuple[list[dict], list[str]]:
    """The per-question view's entries, and the runs left out to keep within ``limit``.
    ``scores``: :func:`helixbench.report.score_index`."""
    items, left_out = [], []
    for run_plan in plan.runs:
        size = sum(len(records[t]) for t in run_plan.tasks)
        if len(items) + size > limit:
            left_out.append(run_plan.label)
            continue
        items += _run_items(run_plan, records, scores, questions, labels, primary)
    return items, left_out


def _run_items(run_plan, records, scores, questions, labels, primary) -> list[dict]:
    items = []
    for task in run_plan.tasks:
        of_task = records[task]
        run = run_plan.label
        metric = primary(task.task)
        for record in of_task:
            question = questions[record["question_id"]]
            score = scores.get((run, task.task, metric), {}).get(question.id)
            if (run, question.id) in labels:
                status = "wrong"
            elif metric not in CORRECTNESS_SCORERS:
                status = "graded"
            else:
                status = "right" if score is not None and score >= 1 else "wrong"
            gold = question.gold if isinstance(question.gold, str) else ", ".join(question.gold)
            items.append(
                {
                    "id": question.id,
                    "run": run,
                    "task": question.task,
                    "text": question.text,
                    "gold": gold,
                    "answer": shown_text(record["answer"]),
                    "error": record["error"],
                    "metric": metric,
                    "score": score,
                    "status": status,
                    "type": labels.get((run, question.id)),
                    "header": record.get("header_sha256"),
                    "events": shown_text(record["events"]),
                }
            )
    return items


def write_html(out: Path, context: dict) -> None:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )
    html = env.get_template("report.html.j2").render(fmt=fmt, **context)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
