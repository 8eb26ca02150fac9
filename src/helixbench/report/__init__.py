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
from ..plan import Plan
from ..questions import read_questions
from ..run_health import run_warnings
from .comparisons import comparison_table, shown_comparisons
from .crate import CONFIG_FILE, CRATE_FILE, write_crate
from .errors import error_types, table4_agreement
from .genesets import geneset_percentiles, geneset_table
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


def write_report(plan: Plan, config: dict, config_digest: str, out_dir: Path) -> None:
    from .figures import ablation_figure, leaderboard_figure, percentile_figure
    from .html import html_table, inline_svg, prompt_headers, question_items, write_html

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = {q.id: q for q in read_questions(Path(paths.QUESTIONS))}
    scores = load_scores(plan)
    summary = score_table(plan, scores)
    summary.to_csv(out_dir / "scores.csv", index=False)
    records = load_records(plan)
    replay = replay_table(plan, records)
    replay.to_csv(out_dir / "replay.csv", index=False)
    errors = error_table(plan, records)
    errors.to_csv(out_dir / "errors.csv", index=False)
    costs = cost_table(plan, records, config.get("prices", {}))
    costs.to_csv(out_dir / "cost.csv", index=False)
    t2 = table2(plan, summary)
    t2.to_csv(out_dir / "table2.csv", index=False)
    (out_dir / "table2.md").write_text(t2.to_markdown(index=False, disable_numparse=True) + "\n")
    hop = genehop_table(plan, summary)
    (out_dir / "genehop.md").write_text(hop.to_markdown(index=False, disable_numparse=True) + "\n")
    index = score_index(scores)
    comparisons = comparison_table(plan, index)
    comparisons.to_csv(out_dir / "comparisons.csv", index=False)
    protocols = protocol_table(plan, summary, records)
    protocols.to_csv(out_dir / "protocols.csv", index=False)
    tests = protocol_tests(plan, index)
    tests.to_csv(out_dir / "protocol_tests.csv", index=False)
    bank = bank_table(plan, scores)
    bank.to_csv(out_dir / "question_bank.csv", index=False)
    bank_board = bank_leaderboard(plan, scores, questions)
    bank_board.to_csv(out_dir / "question_bank_leaderboard.csv", index=False)
    overlap = overlap_table(questions)
    overlap.to_csv(out_dir / "overlap.csv", index=False)
    golds = overlap_golds(questions)
    golds.to_csv(out_dir / "overlap_golds.csv", index=False)
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
    taxonomy, labels = error_types(plan, records, index, questions)
    taxonomy.to_csv(out_dir / "taxonomy.csv", index=False)
    table4 = table4_agreement(plan, taxonomy)
    ablation = ablation_table(plan, summary)
    ablation.to_csv(out_dir / "ablation.csv", index=False)
    board = leaderboard(plan, summary, scores)
    board.to_csv(out_dir / "leaderboard.csv", index=False)
    geneset_board = geneset_leaderboard(plan, summary)
    geneset_board.to_csv(out_dir / "genesets_leaderboard.csv", index=False)
    imports = import_table(plan, questions)
    imports.to_csv(out_dir / "imports.csv", index=False)
    agents = agent_table(plan, records)
    agents.to_csv(out_dir / "agents.csv", index=False)
    genesets = geneset_table(plan, summary, records)
    genesets.to_csv(out_dir / "genesets.csv", index=False)
    percentile_figure(geneset_percentiles(plan, scores), out_dir)
    imported = imported_runs(plan, board)
    leaderboard_figure(board, out_dir)
    ablation_figure(ablation, out_dir)
    prov = provenance(plan, records, config, config_digest)
    (out_dir / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    write_question_scores(
        question_score_table(plan, scores, config_digest), out_dir, prov["helixbench"]
    )
    t2_nodemo = table2(plan, summary, "genegpt_excl_demos")
    tables = {
        "t2": table2(plan, summary, intervals=True),
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
            "leaderboard": board.to_dict("records"),
            "geneset_leaderboard": geneset_board.to_dict("records"),
            "imported": imported,
            "imports": html_table(imports),
            "figures": {name: inline_svg(out_dir / f"{name}.svg") for name in FIGURE_NAMES},
            "tables": {
                "comparisons": html_table(shown_comparisons(comparisons).drop(columns="pair")),
                "protocols": html_table(protocols) if not protocols.empty else None,
                "protocol_tests": html_table(tests) if not tests.empty else None,
                "table2": html_table(table2(plan, summary, intervals=True)),
                "table2_nodemo": html_table(t2_nodemo),
                "table2_strict": html_table(table2(plan, summary, "strict", intervals=True)),
                "ablation": html_table(ablation),
                "genehop": html_table(hop),
                "genesets": html_table(genesets) if not genesets.empty else None,
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
