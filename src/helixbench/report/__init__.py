"""The report: every table, figure and text under ``results/report/``.

Everything is computed from the run and score files the plan names, so rerunning
the report on the same results gives the same numbers. :func:`write_report` is
the table of contents; each module holds one concern (the files' names, captions
and categories are in :data:`helixbench.paths.REPORT_FILES`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import paths
from ..datasets.questions import read_questions
from ..plan import Plan
from ..run_health import run_warnings
from .comparisons import comparison_table, shown_comparisons
from .crate import CONFIG_FILE, CRATE_FILE, write_crate
from .errors import error_types, table4_agreement
from .geneagent_paper import geneagent_paper_table, paper_layout
from .genesets import geneset_percentiles, geneset_table
from .headline import headline_sentence, headline_table
from .imported import import_table, imported_runs
from .layouts import ablation_table, genehop_table, table2
from .leaderboard import geneset_leaderboard, leaderboard
from .markdown import _markdown
from .operations import agent_table, cost_table, error_table, replay_table
from .protocols import protocol_table, protocol_tests
from .provenance import provenance
from .question_bank import (
    CITATIONS,
    bank_layout,
    bank_leaderboard,
    bank_table,
    overlap_golds,
    overlap_table,
)
from .question_scores import question_score_table, write_question_scores
from .records import load_records, load_scores, primary_metric, score_index
from .scores import score_table
from .text import fmt
from .tool_replies import export_tool_replies


def write_report(plan: Plan, config: dict, config_digest: str, out_dir: Path) -> None:
    from .figures import ablation_figure, leaderboard_figure, percentile_figure
    from .html import html_table, inline_svg, prompt_headers, question_items, write_html

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = {q.id: q for q in read_questions(Path(paths.QUESTIONS))}
    scores = load_scores(plan)
    summary = score_table(plan, scores)
    records = load_records(plan)
    index = score_index(scores)
    bank = bank_table(plan, scores)
    overlap = overlap_table(questions)
    golds = overlap_golds(questions)
    taxonomy, labels = error_types(plan, records, index, questions)
    board = leaderboard(plan, summary, scores)
    geneset_board = geneset_leaderboard(plan, summary)
    csv_tables = {  # each written as <name>.csv
        "scores": summary,
        "replay": replay_table(plan, records),
        "errors": error_table(plan, records),
        "cost": cost_table(plan, records, config.get("prices", {})),
        "table2": table2(plan, summary),
        "comparisons": comparison_table(plan, index),
        "protocols": protocol_table(plan, summary, records),
        "protocol_tests": protocol_tests(plan, index),
        "question_bank": bank,
        "question_bank_leaderboard": bank_leaderboard(plan, scores, questions),
        "overlap": overlap,
        "overlap_golds": golds,
        "taxonomy": taxonomy,
        "ablation": ablation_table(plan, summary),
        "leaderboard": board,
        "genesets_leaderboard": geneset_board,
        "headline": headline_table(plan, index, board, geneset_board),
        "imports": import_table(plan, questions),
        "agents": agent_table(plan, records),
        "genesets": geneset_table(plan, summary, records),
        "geneagent_paper": geneagent_paper_table(plan, scores, summary),
    }
    for name, table in csv_tables.items():
        table.to_csv(out_dir / f"{name}.csv", index=False)
    replay, errors, costs = csv_tables["replay"], csv_tables["errors"], csv_tables["cost"]
    comparisons, protocols = csv_tables["comparisons"], csv_tables["protocols"]
    tests, ablation, genesets = (
        csv_tables["protocol_tests"],
        csv_tables["ablation"],
        csv_tables["genesets"],
    )
    imports, agents, headline = csv_tables["imports"], csv_tables["agents"], csv_tables["headline"]
    bank_board = csv_tables["question_bank_leaderboard"]
    t2 = csv_tables["table2"]
    (out_dir / "table2.md").write_text(t2.to_markdown(index=False, disable_numparse=True) + "\n")
    hop = genehop_table(plan, summary)
    (out_dir / "genehop.md").write_text(hop.to_markdown(index=False, disable_numparse=True) + "\n")
    # The question bank's section: for the newer benchmarks a run covers.
    covered = [b for b in CITATIONS if any(t.benchmark == b for t in plan.tasks)]
    bank_section = {
        "benchmarks": [
            {"name": b, "citation": CITATIONS[b], "layout": bank_layout(bank, b)} for b in covered
        ],
        "leaderboard": bank_board,
        "overlap": overlap[overlap.benchmark.isin(covered)],
        "golds": golds[golds.benchmark.isin(covered)],
    }
    table4 = table4_agreement(plan, taxonomy)
    percentile_figure(geneset_percentiles(plan, scores), out_dir)
    imported = imported_runs(plan, board)
    leaderboard_figure(board, out_dir)
    ablation_figure(ablation, out_dir)
    export_tool_replies(records, out_dir / "tool_replies.jsonl")
    prov = provenance(plan, records, config, config_digest)
    (out_dir / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    write_question_scores(
        question_score_table(plan, scores, config_digest), out_dir, prov["helixbench"]
    )
    t2_nodemo = table2(plan, summary, "genegpt_excl_demos")
    t2_intervals = table2(plan, summary, intervals=True)
    tables = {
        "headline": headline,
        "t2": t2_intervals,
        "t2_nodemo": t2_nodemo,
        "hop": hop,
        "replay": replay,
        "errors": errors,
        "costs": costs,
        "agents": agents,
        "comparisons": comparisons,
        "protocols": protocols,
        "protocol_tests": tests,
        "taxonomy": taxonomy,
        "table4": table4,
        "board": board,
        "geneset_board": geneset_board,
        "imports": imports,
        "imported": imported,
        "genesets": genesets,
        "geneagent_paper": csv_tables["geneagent_paper"],
        "bank": bank_section if covered else None,
    }
    notes = plan.notes + run_warnings(plan.tasks, records)
    (out_dir / "report.md").write_text(_markdown(notes, prov, tables))
    replay_calls = int(replay.calls.sum()) if not replay.empty else 0
    items, left_out = question_items(
        plan, records, index, questions, labels, lambda t: primary_metric(plan, t)
    )
    write_html(
        out_dir / "index.html",
        {
            "prov": prov,
            "notes": notes,
            "headline": [
                {**row, "sentence": headline_sentence(row, fmt)}
                for row in headline.to_dict("records")
            ],
            "leaderboard": board.to_dict("records"),
            "geneset_leaderboard": geneset_board.to_dict("records"),
            "imported": imported,
            "imports": html_table(imports),
            "figures": {name: inline_svg(out_dir / f"{name}.svg") for name in FIGURE_NAMES},
            "tables": {
                "comparisons": html_table(shown_comparisons(comparisons).drop(columns="pair")),
                "protocols": html_table(protocols) if not protocols.empty else None,
                "protocol_tests": html_table(tests) if not tests.empty else None,
                "table2": html_table(t2_intervals),
                "table2_nodemo": html_table(t2_nodemo),
                "table2_strict": html_table(table2(plan, summary, "strict", intervals=True)),
                "ablation": html_table(ablation),
                "genehop": html_table(hop),
                "genesets": html_table(genesets) if not genesets.empty else None,
                "geneagent_paper": html_table(paper_layout(csv_tables["geneagent_paper"]))
                if not csv_tables["geneagent_paper"].empty
                else None,
                "bank_leaderboard": html_table(bank_board) if covered else None,
                "overlap": html_table(bank_section["overlap"]) if covered else None,
                "overlap_golds": html_table(bank_section["golds"]) if covered else None,
                "taxonomy": html_table(taxonomy),
                "table4": html_table(pd.DataFrame(table4["rows"])) if table4 else None,
                "cost": html_table(costs),
                "errors": html_table(errors),
            },
            "bank": [
                {"name": b["name"], "citation": b["citation"], "table": html_table(b["layout"])}
                for b in bank_section["benchmarks"]
            ],
            "table4": table4,
            "comparisons_shown": len(shown_comparisons(comparisons)),
            "replay_hits": int(replay.hits.sum()) if not replay.empty else 0,
            "replay_calls": replay_calls,
            "runs": list(dict.fromkeys(q["run"] for q in items)),
            "left_out": left_out,
            "task_names": list(dict.fromkeys(t.task for t in plan.tasks)),
            "headers": prompt_headers(records),
            "questions": items,
        },
    )
    described = [n for n in paths.REPORT_FILES if n not in (CRATE_FILE, CONFIG_FILE)]
    write_crate(out_dir, described, plan, records, prov)
    missing = [name for name in paths.REPORT_FILES if not (out_dir / name).is_file()]
    if missing:  # the report rule declares every file of paths.REPORT as its output
        raise RuntimeError(f"the report did not write {', '.join(missing)}")


FIGURE_NAMES = ("leaderboard", "ablation", "percentile")
