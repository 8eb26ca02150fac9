"""Imported runs: how their items matched our questions, and their provenance."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...config.plan import Plan
from ...paths import upstream_path
from ...sources.bixbench import read_rows
from ...sources.labbench2 import read_merged
from ...sources.published import claimed_score, coverage, load_items

IMPORT_COLUMNS = [
    "run",
    "benchmark",
    "task",
    "source",
    "file",
    "sha256",
    "questions",
    "source_items",
    "matched",
    "missing",
    "unmatched",
    "duplicates",
]


def import_table(plan: Plan, questions: dict) -> pd.DataFrame:
    """Per imported run and task: how the source's items matched our questions
    (verbatim); ``missing`` ones are scored as misses, ``unmatched`` ones (not our
    questions) are left out, and both are counted here."""
    texts: dict[tuple[str, str], list[str]] = {}
    ids: dict[tuple[str, str], list[str]] = {}  # (LABBench2's: matched by its ids)
    for q in sorted(questions.values(), key=lambda q: q.index):  # dataset order
        texts.setdefault((q.benchmark, q.task), []).append(q.text)
        ids.setdefault((q.benchmark, q.task), []).append(q.source_id)
    rows = []
    for task in plan.tasks:
        if task.imported_reports:  # a LABBench2 system's reports, or a user's own files
            file, sha256 = task.imported_reports[0]
            file = task.imported.url if task.imported else file
            if task.imported_format == "labbench2":  # (merged as LABBench2 merges them)
                merged = read_merged(task.imported_reports)
                items = {row["id"]: row for row in [*merged["cases"], *merged["failures"]]}
            else:
                items = read_rows(Path(file), sha256, task.benchmark == "bixbench-mcq")
            ours, duplicates = ids.get((task.benchmark, task.task), []), 0
        elif task.imported_format == "bixbench":  # (its rows by BixBench's question ids)
            file, sha256 = task.imported.url, task.imported.sha256
            mcq = task.benchmark == "bixbench-mcq"
            items = read_rows(Path(task.imported_path), sha256, mcq)
            ours, duplicates = ids.get((task.benchmark, task.task), []), 0
        elif task.imported is not None:
            ours = texts.get((task.benchmark, task.task), [])
            file, sha256 = task.imported.url, task.imported.sha256
            items, duplicates = load_items(
                Path(task.imported_path), task.imported_format, task.task, sha256, ours
            )
        else:
            continue
        rows.append(
            {
                "run": task.label,
                "benchmark": task.benchmark,
                "task": task.task,
                "source": plan.sources[task.model]["name"],
                "file": file,
                "sha256": sha256,
                **coverage(items, ours, duplicates),
            }
        )
    return pd.DataFrame(rows, columns=IMPORT_COLUMNS)


def imported_runs(plan: Plan, board: pd.DataFrame) -> list[dict]:
    """Each imported run's provenance, its scores under our rules and the score its
    source claims for itself (read from the source's own file where it states one)."""
    out = []
    for run in plan.runs:
        if not run.imported:
            continue
        source = plan.sources[run.model]
        for benchmark in dict.fromkeys(t.benchmark for t in run.tasks):
            claim_file = plan.claims.get(run.model, {}).get(benchmark)
            claim = claimed_score(
                source, benchmark, Path(upstream_path(claim_file)) if claim_file else None
            )
            ours = board[(board.run == run.label) & (board.benchmark == benchmark)]
            row = ours.iloc[0] if not ours.empty else {}
            out.append(
                {
                    "run": run.label,
                    "benchmark": benchmark,
                    "source": source["name"],
                    "repo": source["repo"],
                    "commit": source["commit"],
                    "model": source.get("model"),
                    "prompt": source.get("prompt"),
                    "evaluator": source.get("evaluator"),
                    "cite": source.get("cite"),
                    "format": source.get("format"),
                    "claimed": claim["score"] if claim else None,
                    "claimed_where": claim["where"] if claim else None,
                    "extracted": row.get("extracted"),
                    "genegpt": row.get("genegpt"),
                    "badly_formatted": row.get("badly_formatted"),
                }
            )
    return out
