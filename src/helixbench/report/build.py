"""The report's table of contents (:func:`write_report`): every table, figure and text
under ``results/report/``, joined from the runs' summaries (:mod:`.run_share.run_summary`); the
files' names, captions and categories are in :data:`helixbench.paths.REPORT_FILES`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import paths
from ..collector import set_aside
from ..config.plan import Plan
from ..datasets.questions import read_questions
from ..scoring.rag_assessment import SCORES as RAGAS_SCORES
from .exports.crate import CONFIG_FILE, CRATE_FILE, write_crate
from .exports.provenance import built_from, provenance
from .joined import (
    joined_bank,
    joined_cost,
    joined_rows,
    joined_scores,
    prompts_reader,
    read_summaries,
)
from .page.markdown import _markdown
from .run_share.errors import table4_agreement
from .run_share.tool_replies import export_code_executions, export_tool_replies
from .store import store_scores
from .tables.bank_board import BANK_BOARD_TEXT, bank_board_shown, bank_names
from .tables.bixbench import BENCHMARKS as BIXBENCH
from .tables.bixbench import (
    beside_table,
    bixbench_shown,
    bixbench_table,
    paired_table,
    verifier_table,
)
from .tables.comparisons import asked_pairs, comparison_table, pair_formula
from .tables.frontier import BENCHMARK as LABBENCH2
from .tables.frontier import (
    SUCCESSORS,
    agreement_table,
    disagreement_table,
    frontier_shown,
    frontier_table,
    successors_table,
    tools_table,
)
from .tables.geneagent_paper import geneagent_paper_table, paper_layout
from .tables.genesets import geneset_percentiles, geneset_table
from .tables.headline import HEADLINE_METHOD, headline_sentence, headline_table
from .tables.imported import import_table, imported_runs
from .tables.judges import (
    CALIBRATED,
    CALIBRATION_TEXT,
    JUDGES_TEXT,
    JURY_TEXT,
    calibration_table,
    corrected_table,
    judge_table,
    jury_tables,
)
from .tables.layouts import ablation_table, genehop_table, table2
from .tables.leaderboard import (
    GENESETS,
    all_boards,
    board_page,
    encoders_of,
    geneset_leaderboard,
    leaderboard,
)
from .tables.operations import with_shared_prompts
from .tables.protocols import protocol_table, protocol_tests
from .tables.question_bank import CITATIONS, bank_layout, overlap_golds, overlap_table
from .tables.rag_assessment import ragas_table
from .tables.robustness import rank_table, robustness_table
from .text import fmt

# Up to this many questions in all, the page loads every run's questions as it opens
# (and renders their transcripts), as a small report's reader expects; past it, a run's
# are loaded when the reader picks it.
AUTOLOAD_QUESTIONS = 5000
# Pairs of the headline shown on the page per benchmark (all in headline.csv).
HEADLINE_SHOWN = 12
# How the long tables (paths.LONG_TABLES) are written: gzip, no time in its header.
GZIP = {"method": "gzip", "compresslevel": 6, "mtime": 0}


def write_report(
    plan: Plan,
    config: dict,
    config_digest: str,
    out_dir: Path,
    sources: list[str] | None = None,
) -> None:
    """The report of ``plan``'s runs (exactly those: ``sources``, the config files it
    was built from, are named on its first screen) into ``out_dir``."""
    from .page.figures import (
        ablation_figure,
        leaderboard_figure,
        percentile_figure,
        robustness_figure,
    )
    from .page.html import html_table, inline_code, inline_svg, write_html
    from .run_share.details import (
        BUNDLED_PAGE,
        CALLBACK,
        MAX_TEXT_CHARS,
        details_link,
        inline_run_scripts,
        opened_in,
        packed_text,
        place_exports,
        question_facts,
    )

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = {q.id: q for q in read_questions(Path(paths.QUESTIONS))}
    summaries = read_summaries(plan)
    set_aside()  # (held to the report's end: no pass of the collector goes over them)
    facts = {  # each task's facts of its records (run_summary.task_facts)
        (f["benchmark"], f["task"], label): f
        for label, summary in summaries.items()
        for f in summary["tasks"]
    }
    facts = {task: facts[(task.benchmark, task.task, task.label)] for task in plan.tasks}
    report_options = config.get("report", {})
    place_exports(plan.runs if report_options.get("exports") else [], out_dir)
    store = store_scores(
        plan, config_digest, out_dir, csv=report_options.get("question_scores_csv", False)
    )
    rows_of = {name: store.rows(selected) for name, selected in ROWS_OF.items()}
    summary = joined_scores(plan, summaries)
    index = store.index
    bank, bank_board = joined_bank(plan, summaries)
    overlap = overlap_table(questions)
    golds = overlap_golds(questions)
    taxonomy = joined_rows(plan, summaries, "taxonomy")
    board = leaderboard(plan, summary, store.reformatted())
    geneset_board = geneset_leaderboard(plan, summary, rows_of["genesets"])
    protocols = protocol_table(plan, summary, facts, bank_board)
    pairs = asked_pairs(plan, summary)
    csv_tables = {  # each written as <name>.csv
        "scores": summary,
        "replay": joined_rows(plan, summaries, "replay"),
        "errors": joined_rows(plan, summaries, "errors"),
        "cost": joined_cost(plan, summaries, config.get("prices", {})),
        "table2": table2(plan, summary),
        "comparisons": comparison_table(plan, index, summary),
        "protocols": protocols,
        "protocol_tests": protocol_tests(plan, index, protocols),
        "question_bank": bank,
        "question_bank_leaderboard": bank_board,
        "overlap": overlap,
        "overlap_golds": golds,
        "taxonomy": taxonomy,
        "ablation": ablation_table(plan, summary),
        "leaderboard": all_boards(plan, board, bank_board),
        "genesets_leaderboard": geneset_board,
        "headline": headline_table(plan, index, board, geneset_board, bank_board),
        "imports": import_table(plan, questions),
        "agents": with_shared_prompts(
            joined_rows(plan, summaries, "agents"), summaries, prompts_reader(plan)
        ),
        "genesets": geneset_table(plan, summary, facts),
        "geneagent_paper": geneagent_paper_table(plan, rows_of["genesets"], summary),
        "ragas": ragas_table(plan, summary, rows_of["ragas"]),
        "robustness": robustness_table(plan, summary),
        "hu_ranks": rank_table(plan, rows_of["percentile"], questions),
        "labbench2": frontier_table(
            plan, rows_of["labbench2"], summaries, config.get("prices", {})
        ),
        "labbench2_tools": tools_table(plan, rows_of["labbench2"]),
        "labbench2_agreement": agreement_table(rows_of["labbench2"], questions, summaries),
        "labbench2_disagreements": disagreement_table(summaries, questions),
        "labbench2_successors": successors_table(plan, rows_of["labbench2"]),
        "bixbench": bixbench_table(plan, rows_of["bixbench"], summaries),
        "bixbench_paired": paired_table(plan, rows_of["bixbench"]),
        "bixbench_verifier": verifier_table(summaries),
        "bixbench_beside": beside_table(plan, rows_of["beside"]),
        "judges": judge_table(plan, summaries),
        "judge_calibration": (calibration := calibration_table(rows_of["judged"])),
        "judge_corrected": corrected_table(plan, rows_of["judged"], calibration),
    }
    csv_tables["judge_agreement"], csv_tables["judge_disagreements"] = jury_tables(plan, summaries)
    for name, table in csv_tables.items():
        compression = GZIP if name in paths.LONG_TABLES else None
        table.to_csv(out_dir / paths.table_file(name), index=False, compression=compression)
    replay, errors, costs = csv_tables["replay"], csv_tables["errors"], csv_tables["cost"]
    comparisons, tests = csv_tables["comparisons"], csv_tables["protocol_tests"]
    ablation, genesets = csv_tables["ablation"], csv_tables["genesets"]
    imports, agents, headline = csv_tables["imports"], csv_tables["agents"], csv_tables["headline"]
    t2 = csv_tables["table2"]
    hop = genehop_table(plan, summary)
    for name, table, benchmark in (("table2", t2, "GeneTuring"), ("genehop", hop, "GeneHop")):
        text = (
            f"No {benchmark} run in this report."
            if table.empty
            else table.to_markdown(index=False, disable_numparse=True)
        )
        (out_dir / f"{name}.md").write_text(text + "\n")
    # The question bank's section: for the newer benchmarks a run covers.
    covered = [b for b in CITATIONS if any(t.benchmark == b for t in plan.tasks)]
    bank_section = {
        "benchmarks": [
            {"name": b, "citation": CITATIONS[b], "layout": bank_layout(bank, b)} for b in covered
        ],
        "leaderboard": bank_board,
        "names": bank_names(covered),
        "overlap": overlap[overlap.benchmark.isin(covered)],
        "golds": golds[golds.benchmark.isin(covered)],
    }
    table4 = table4_agreement(plan, taxonomy)
    percentile_figure(geneset_percentiles(plan, rows_of["genesets"]), out_dir)
    robustness_figure(csv_tables["robustness"], out_dir)
    imported = imported_runs(plan, board)
    leaderboard_figure(board, out_dir)
    ablation_figure(ablation, out_dir)
    export_tool_replies(
        [k for s in summaries.values() for k in s["tool_keys"]], out_dir / "tool_replies.jsonl"
    )
    export_code_executions(
        [k for s in summaries.values() for k in s.get("code_keys", ())],
        out_dir / "code_executions.jsonl",
    )
    prov = provenance(plan, facts, config, config_digest, sources)
    (out_dir / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    t2_nodemo = table2(plan, summary, "genegpt_excl_demos")
    t2_intervals = table2(plan, summary, intervals=True)
    formula = pair_formula(plan, pairs)
    # The errors table only where a run ended a question in an error or used a tool
    # (errors.csv always has it): rows of zeros are a section with nothing to show.
    counted = errors.drop(columns=["questions"], errors="ignore").select_dtypes("number")
    replay_calls = int(replay.calls.sum()) if not replay.empty else 0
    if not counted.empty and not counted.to_numpy().any() and not replay_calls:
        errors = errors.iloc[:0]
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
        "comparison_formula": formula,
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
        "robustness": csv_tables["robustness"],
        "hu_ranks": csv_tables["hu_ranks"],
        "ragas": csv_tables["ragas"],
        "bank": bank_section if covered else None,
        "bank_board": bank_board_shown(bank_board) if covered else pd.DataFrame(),
        "frontier": {name: csv_tables[name] for name in FRONTIER_TABLES},
        "bixbench": {name: csv_tables[name] for name in BIXBENCH_TABLES},
        "judges": csv_tables["judges"],
        "judge_calibration": csv_tables["judge_calibration"],
        "judge_corrected": csv_tables["judge_corrected"],
        "judge_agreement": csv_tables["judge_agreement"],
    }
    notes = plan.notes + [w for s in summaries.values() for w in s["warnings"]]
    (out_dir / "report.md").write_text(_markdown(notes, prov, tables))
    folder = opened_in(out_dir)  # (where each run's file is linked from)
    runs = [
        {
            "label": run.label,
            "file": details_link(run, folder),
            "questions": sum(facts[t]["questions"] for t in run.tasks),
        }
        for run in plan.runs
    ]
    total = sum(r["questions"] for r in runs)
    headline_rows = headline.groupby("benchmark", sort=False).head(HEADLINE_SHOWN)
    board_rows, board_axes = board_page(plan, board)
    page = {
        "prov": prov,
        "built_from": built_from(prov),
        "notes": notes,
        "headline": [
            {**row, "sentence": headline_sentence(row, fmt)}
            for row in headline_rows.to_dict("records")
        ],
        "headline_more": len(headline) - len(headline_rows),
        "headline_method": HEADLINE_METHOD,
        "bank_board_text": inline_code(BANK_BOARD_TEXT),
        "judges_text": inline_code(JUDGES_TEXT),
        "calibration_text": inline_code(CALIBRATION_TEXT),
        "jury_text": inline_code(JURY_TEXT),
        "bank_names": bank_names(covered),
        "leaderboard": board_rows,
        "leaderboard_axes": board_axes,
        "geneset_leaderboard": geneset_board.to_dict("records"),
        "geneset_encoders": encoders_of(geneset_board) if not geneset_board.empty else "",
        "geneset_groups": geneset_board.compared_on.nunique(),
        "imported": imported,
        "imports": html_table(imports, "imports.csv"),
        "figures": {name: inline_svg(out_dir / f"{name}.svg") for name in FIGURE_NAMES},
        "tables": {
            "comparisons": html_table(comparisons, paths.table_file("comparisons")),
            "protocols": html_table(protocols, "protocols.csv"),
            "protocol_tests": html_table(tests, "protocol_tests.csv"),
            "table2": html_table(t2_intervals, "table2.csv"),
            "table2_nodemo": html_table(t2_nodemo, paths.table_file("scores")),
            "table2_strict": html_table(
                table2(plan, summary, "strict", intervals=True), paths.table_file("scores")
            ),
            "ablation": html_table(ablation, "ablation.csv"),
            "genehop": html_table(hop, "genehop.md"),
            "genesets": html_table(genesets, "genesets.csv"),
            "geneagent_paper": html_table(
                paper_layout(csv_tables["geneagent_paper"]), "geneagent_paper.csv"
            )
            if not csv_tables["geneagent_paper"].empty
            else None,
            "ragas": html_table(csv_tables["ragas"], "ragas.csv")
            if not csv_tables["ragas"].empty
            else None,
            "robustness": html_table(csv_tables["robustness"], "robustness.csv")
            if not csv_tables["robustness"].empty
            else None,
            "hu_ranks": html_table(csv_tables["hu_ranks"], "hu_ranks.csv")
            if not csv_tables["hu_ranks"].empty
            else None,
            "bank_leaderboard": html_table(bank_board, "question_bank_leaderboard.csv")
            if covered
            else None,
            "bank_board": html_table(bank_board_shown(bank_board), "question_bank_leaderboard.csv")
            if covered
            else None,
            "overlap": html_table(bank_section["overlap"], "overlap.csv") if covered else None,
            "overlap_golds": html_table(bank_section["golds"], "overlap_golds.csv")
            if covered
            else None,
            "taxonomy": html_table(taxonomy, paths.table_file("taxonomy")),
            "table4": html_table(pd.DataFrame(table4["rows"])) if table4 else None,
            "cost": html_table(costs, "cost.csv"),
            "errors": html_table(errors, paths.table_file("errors")) if not errors.empty else None,
            "judges": html_table(csv_tables["judges"], "judges.csv"),
            "judge_calibration": html_table(
                csv_tables["judge_calibration"], "judge_calibration.csv"
            ),
            "judge_corrected": html_table(csv_tables["judge_corrected"], "judge_corrected.csv"),
            "judge_agreement": html_table(csv_tables["judge_agreement"], "judge_agreement.csv"),
        },
        "frontier": {
            name: html_table(frontier_shown(name, csv_tables[name]), f"{name}.csv")
            for name in FRONTIER_TABLES
        },
        "bixbench": {
            name: html_table(bixbench_shown(name, csv_tables[name]), f"{name}.csv")
            for name in BIXBENCH_TABLES
        },
        "bank": [
            {
                "name": b["name"],
                "citation": b["citation"],
                "table": html_table(b["layout"], paths.table_file("question_bank")),
            }
            for b in bank_section["benchmarks"]
        ],
        "table4": table4,
        "comparisons_shown": len(comparisons),
        "comparison_formula": formula,
        "replay_hits": int(replay.hits.sum()) if not replay.empty else 0,
        "replay_calls": replay_calls,
        "runs": runs,
        "autoload": total <= AUTOLOAD_QUESTIONS,
        "eager": total <= AUTOLOAD_QUESTIONS,
        "callback": CALLBACK,
        "max_text_chars": MAX_TEXT_CHARS,
        # (each question's id, task, text and gold, once for every run's file)
        "question_facts": packed_text(question_facts(plan, questions)),
        "task_names": list(dict.fromkeys(t.task for t in plan.tasks)),
    }
    write_html(out_dir / "index.html", {**page, "inline_runs": []})
    # The same page with its runs inside, for Snakemake's own report (which embeds a
    # page without results/summaries beside it).
    write_html(out_dir / BUNDLED_PAGE, {**page, "inline_runs": inline_run_scripts(plan)})
    described = [n for n in paths.REPORT_FILES if n not in (CRATE_FILE, CONFIG_FILE)]
    if report_options.get("question_scores_csv"):
        described.append("question_scores.csv")
    # With them, every file the report placed: its runs' exports.
    exports = out_dir / Path(paths.REPORT_EXPORTS_DIR).relative_to(paths.REPORT_DIR)
    placed = sorted(p.relative_to(out_dir).as_posix() for p in exports.rglob("*") if p.is_file())
    store.written.result()  # (the crate gives its checksum)
    write_crate(out_dir, described + placed, plan, facts, prov)
    missing = [name for name in paths.REPORT_FILES if not (out_dir / name).is_file()]
    if missing:  # the report rule declares every file of paths.REPORT as its output
        raise RuntimeError(f"the report did not write {', '.join(missing)}")


# The per-question rows each group of tables reads from the store, by (benchmark,
# metric): a table reads only the runs that have them (a sweep of the question bank:
# none of these).
ROWS_OF = {
    "genesets": lambda benchmark, metric: benchmark == GENESETS,
    "ragas": lambda benchmark, metric: metric in RAGAS_SCORES.values(),
    "percentile": lambda benchmark, metric: metric == "percentile",
    "labbench2": lambda benchmark, metric: benchmark in (LABBENCH2, *SUCCESSORS),
    "bixbench": lambda benchmark, metric: benchmark in BIXBENCH,
    "beside": lambda benchmark, metric: benchmark.startswith("labbench") or benchmark in BIXBENCH,
    "judged": lambda benchmark, metric: metric in {*CALIBRATED, *CALIBRATED.values()},
}
FIGURE_NAMES = ("leaderboard", "ablation", "percentile", "robustness")
FRONTIER_TABLES = (
    "labbench2",
    "labbench2_tools",
    "labbench2_agreement",
    "labbench2_disagreements",
    "labbench2_successors",
)
BIXBENCH_TABLES = ("bixbench", "bixbench_paired", "bixbench_verifier", "bixbench_beside")
