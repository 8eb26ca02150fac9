"""Report tables from hand-made plans and records (the workflow tests run them end to end)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from helixbench.config import build_plan
from helixbench.report.page.html import html_table
from helixbench.report.tables.operations import cost_table
from helixbench.run.health import run_warnings


def _plan():
    config = {
        "models": {"m": {"backend": "openai", "model": "x", "base_url": "http://localhost:1/v1"}},
        "benchmarks": ["geneturing"],
        "runs": [{"model": "m", "method": "genegpt-slim", "tasks": ["Gene alias", "SNP location"]}],
    }
    return build_plan(config, None)


def _record(qid, error=None, calls=()):
    events = [
        {"type": "model", "index": i, "data": data, "latency_s": latency}
        for i, (data, latency) in enumerate(calls)
    ]
    return {"question_id": qid, "error": error, "events": events, "wall_s": 1.0}


def _index(scores: dict, benchmark: str):
    """A ScoreIndex of {(run, task, metric): {question: score}} on ``benchmark``."""
    from helixbench.report.records import ScoreIndex

    rows = [
        {"question_id": q, "run": run, "benchmark": benchmark, "task": task,
         "metric": metric, "score": score}
        for (run, task, metric), of in scores.items()
        for q, score in of.items()
    ]  # fmt: skip
    return ScoreIndex(pd.DataFrame(rows))


def test_cost_table_keeps_cached_calls_apart_with_their_original_latency():
    plan = _plan()
    alias, snp = plan.tasks
    fresh = {"cache": "miss", "prompt_tokens": 100, "completion_tokens": 10}
    cached = {"cache": "hit", "prompt_tokens": 100, "completion_tokens": 10}
    records = {
        alias: [_record("a", calls=[(fresh, 2.0)])],
        snp: [_record("b", calls=[({**cached, "original_latency_s": 4.0}, 0.001)])],
    }
    row = cost_table(plan, records, {"m": {"prompt": 1.0, "completion": 2.0}}).iloc[0]
    assert (row.model_calls, row.cache_hits, row.prompt_tokens) == (2, 1, 200)
    assert row.model_s == 2.0 and row.cached_model_s == 4.0
    assert row.s_per_model_call == 3.0  # the model's latency, cached or not
    assert row.cost_usd == round((100 * 1.0 + 10 * 2.0) / 1e6, 4)  # only the miss is paid


def test_runs_with_too_many_errors_are_warned_about_with_the_cause():
    plan = _plan()
    alias, snp = plan.tasks
    failed = {"cache": "miss", "error": "HTTP 401 (invalid_api_key): Incorrect API key"}
    records = {
        alias: [_record("a"), _record("b", "model_error", [(failed, 0.1)])],
        snp: [_record("c", "model_error", [(failed, 0.1)])],
    }
    (note,) = run_warnings(plan.tasks, records)
    assert note["level"] == "warning" and (note["model"], note["method"]) == ("m", "genegpt-slim")
    assert note["message"].startswith("2 of 3 questions ended in a model error")
    assert "Incorrect API key" in note["message"]
    assert run_warnings(plan.tasks, {alias: [_record("a")], snp: []}) == []
    # A server that cannot fit the prompts: every question a lengthError, warned with
    # the cause and the settings; one in ten is under the threshold (20%).
    refused = {"error": "the request exceeds the available context size", "prompt_chars": 16_512}
    length = [_record(q, "lengthError", [(refused, 0.1)]) for q in "abcde"]
    (note,) = run_warnings(plan.tasks, {alias: length, snp: []})
    assert note["kind"] == "lengthError" and note["message"].startswith("5 of 5 questions")
    assert "available context size" in note["message"] and "16,512 characters" in note["message"]
    assert "--parallel" in note["message"] and "`cut_length`" in note["message"]
    some = [_record(str(i)) for i in range(9)] + [_record("x", "lengthError", [(refused, 0.1)])]
    assert run_warnings(plan.tasks, {alias: some, snp: []}) == []
    replayed = build_plan(
        {
            "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
            "benchmarks": ["geneturing"],
            "runs": [{"model": "codex", "method": "genegpt-slim", "tasks": ["Gene alias"]}],
        },
        None,
    )
    (task,) = replayed.tasks  # the 2023 model's own errors are facts, not warnings
    assert run_warnings(replayed.tasks, {task: length}) == []


def test_html_tables_show_a_missing_value_as_blank():
    html = str(html_table(pd.DataFrame({"cost_usd": [None, 0.5], "model": ["a", None]})))
    assert "None" not in html and "nan" not in html.lower() and "0.5" in html


# -- tables from hand-made scores ---------------------------------------------------------


def _summary(rows) -> pd.DataFrame:
    """A scores.csv-like table: (model, method, benchmark, task, metric, score, paper)."""
    from helixbench.report.tables.scores import SCORE_COLUMNS

    full = [
        {
            "benchmark": b,
            "task": t,
            "model": m,
            "method": me,
            "metric": metric,
            "n": 50,
            "score": score,
            "paper": paper,
            "ci_low": score - 0.1,
            "ci_high": score + 0.1,
        }
        for m, me, b, t, metric, score, paper in rows
    ]
    return pd.DataFrame(full, columns=SCORE_COLUMNS)


def test_table2_puts_the_papers_column_beside_the_runs_it_reproduces_only():
    from helixbench.benchmarks import tasks_of
    from helixbench.report.tables.layouts import table2

    config = {
        "models": {
            "codex": {"backend": "replay", "recording": "genegpt-2023"},
            "m": {"backend": "openai", "model": "x", "base_url": "http://localhost:1/v1"},
        },
        "benchmarks": ["geneturing"],
        "runs": [{"models": ["codex", "m"], "method": "genegpt-slim"}],
    }
    plan = build_plan(config, None)
    rows = [
        (
            model,
            "genegpt-slim",
            "geneturing",
            task,
            "genegpt",
            0.5,
            0.84 if model == "codex" else None,
        )
        for model in ("codex", "m")
        for task in [*tasks_of("geneturing"), "macro"]
    ]
    table = table2(plan, _summary(rows))
    assert list(table.columns) == [
        "module",
        "task",
        "codex / genegpt-slim",
        "codex / genegpt-slim (paper)",
        "m / genegpt-slim",
    ]
    alias = table[table.task == "Gene alias"].iloc[0]
    assert alias["codex / genegpt-slim (paper)"] == "0.84"
    nomenclature = table[(table.module == "Nomenclature") & (table.task == "Average")].iloc[0]
    assert nomenclature["codex / genegpt-slim (paper)"] == "0.92"  # Table 2's module average
    # Under another metric the paper has no column at all.
    strict = table2(plan, _summary([(*r[:4], "strict", r[5], None) for r in rows]), "strict")
    assert not any(c.endswith("(paper)") for c in strict.columns)


def _task_summary(plan, scores) -> pd.DataFrame:
    """scores.csv's task rows of a {(run, task, metric): {question: score}} index."""
    runs = {r.label: r for r in plan.runs}
    rows = [
        (runs[run].model, runs[run].method, "geneturing", task, metric, sum(s.values()) / len(s))
        for (run, task, metric), s in scores.items()
    ]
    rows = [(*row, None) for row in rows]
    return _summary(rows)


def test_paired_tests_are_the_structured_pairs_with_holms_correction():
    from helixbench.report.tables.comparisons import asked_pairs, comparison_table, pair_formula
    from helixbench.stats import holm

    config = {
        "models": {
            n: {"backend": "openai", "model": n, "base_url": "http://localhost:1/v1"}
            for n in ("a", "b")
        },
        "benchmarks": ["geneturing"],
        "runs": [{"models": ["a", "b"], "methods": ["genegpt-slim", "genegpt-full"]}],
    }
    plan = build_plan(config, None)
    qids = [f"q{i}" for i in range(20)]
    scores = {}
    for run in plan.runs:
        good = 0.9 if run.model == "a" else 0.3
        for task in run.tasks:
            scores[(run.label, task.task, "genegpt")] = {
                q: float(i / 20 < good + (0.05 if run.method == "genegpt-full" else 0))
                for i, q in enumerate(qids)
            }
    summary = _task_summary(plan, scores)
    table = comparison_table(plan, scores, summary)
    pairs = {(r.run_a, r.run_b): r.pair for r in table.itertuples()}
    # Each model against its best method (full), each method against its best model (a).
    assert pairs == {
        ("a / genegpt-slim", "a / genegpt-full"): "same model",
        ("b / genegpt-slim", "b / genegpt-full"): "same model",
        ("a / genegpt-slim", "b / genegpt-slim"): "same method",
        ("a / genegpt-full", "b / genegpt-full"): "same method",
    }
    assert len(table) == 4 * 9 and table.p_holm.notna().all()
    assert list(table.p_holm) == [round(p, 4) for p in holm(list(table.p_value))]
    said = pair_formula(plan, asked_pairs(plan, summary))
    assert "= 2 + 2 + 0 = 4 pairs over 1 benchmark (4 runs)" in said


def test_the_pairs_tested_grow_with_the_runs_not_their_square():
    from helixbench.report.tables.comparisons import asked_pairs

    def pairs(n_models, n_methods):
        models = {
            f"m{i}": {"backend": "openai", "api": "chat", "model": "x", "base_url": "http://h/v1"}
            for i in range(n_models)
        }
        methods = ["no-tools", *(f"genegpt-{i:06b}" for i in range(1, n_methods))]
        config = {
            "models": models,
            "benchmarks": ["genehop"],
            "methods": {"no-tools": {"kind": "no-tools"}},
            "runs": [{"models": list(models), "methods": methods}],
        }
        plan = build_plan(config, None)
        return asked_pairs(plan, _summary([])), plan

    found, plan = pairs(6, 8)
    runs = len(plan.runs)  # 48; every pair would be 1,128
    # Within a model: its runs against the best (7 each); within a method: 5 each; and
    # the runs against their baseline that the best-of-model pairs left out.
    assert sum(p[3] == "same model" for p in found) == 6 * 7
    assert sum(p[3] == "same method" for p in found) == 8 * 5
    assert len(found) <= 3 * runs and len({frozenset(p[1:3]) for p in found}) == len(found)
    assert all(a != b for _, a, b, _ in found)
    bigger, plan = pairs(12, 16)
    assert len(bigger) <= 3 * len(plan.runs)


def test_holm_adjusts_a_family_of_p_values():
    from helixbench.stats import holm

    # m = 4: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06 (monotone), 0.5
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.4, 0.5]) == [0.8, 0.8]
    assert holm([]) == []


def test_gene_sets_have_their_own_leaderboard():
    from helixbench.report.tables.leaderboard import geneset_leaderboard, leaderboard

    config = {
        "models": {
            "gprofiler": {"backend": "enrichment"},
            "m": {"backend": "openai", "model": "x", "base_url": "http://localhost:1/v1"},
        },
        "benchmarks": ["genesets"],
        "runs": [
            {"model": "gprofiler", "method": "gsea-top1", "tasks": ["MSigDB"]},
            {"model": "m", "method": "closed-book", "tasks": ["GO", "NeST"]},
        ],
    }
    plan = build_plan(config, None)
    rows = [
        ("gprofiler", "gsea-top1", "genesets", t, metric, v, None)
        for t, metric, v in [("MSigDB", "embedding", 0.48), ("macro", "embedding", 0.48),
                             ("MSigDB", "rougeL", 0.27), ("macro", "rougeL", 0.27)]
    ] + [
        ("m", "closed-book", "genesets", t, metric, v, None)
        for t, metric, v in [("GO", "embedding", 0.6), ("NeST", "embedding", 0.7),
                             ("macro", "embedding", 0.65), ("macro", "rougeL", 0.2)]
    ]  # fmt: skip
    summary = _summary(rows)
    scores = pd.DataFrame(
        [("m / closed-book", "genesets", "q1", "embedding", 0.6, "all-MiniLM-L6-v2 (stand-in)")],
        columns=["run", "benchmark", "question_id", "metric", "score", "scored_by"],
    )
    board = geneset_leaderboard(plan, summary, scores)
    assert list(board.run) == ["m / closed-book", "gprofiler / gsea-top1"]  # by embedding
    first, other = board.iloc[0], board.iloc[1]
    assert (first.embedding, first.rougeL, first.datasets, first.sets) == (0.65, 0.2, 2, 100)
    assert first.embedding_ci_low == pytest.approx(0.55)
    # Different datasets: each is first among the runs it can be compared with.
    assert (first["rank"], other["rank"]) == (1, 1)
    assert first.compared_on == "GO, NeST (100 sets)" and other.compared_on.startswith("MSigDB")
    assert first.scored_by == "all-MiniLM-L6-v2 (stand-in)" and pd.isna(other.scored_by)
    assert leaderboard(plan, summary, {}).empty


def test_one_models_protocols_side_by_side_with_macro_weighted_paired_tests():
    from helixbench.report.run_share.run_summary import task_facts
    from helixbench.report.tables.protocols import protocol_table, protocol_tests

    config = {
        "models": {
            n: {"backend": "openai", "api": "chat", "model": n, "base_url": "http://localhost:1/v1"}
            for n in ("a", "b")
        },
        "benchmarks": ["geneturing"],
        "methods": {
            "fc": {"kind": "function-calling", "demonstrations": False},
            "bare": {"kind": "no-tools"},
        },
        "runs": [
            {
                "model": "a",
                "methods": ["genegpt-slim", "fc", "bare"],
                "tasks": ["Gene alias", "SNP location"],
            },
            # One protocol only: not in the section.
            {"model": "b", "method": "fc", "tasks": ["Gene alias", "SNP location"]},
        ],
    }  # fmt: skip
    plan = build_plan(config, None)
    # Gene alias: 2 questions, SNP location: 4; "a / fc" is right on every alias question
    # only, "a / bare" on nothing: the macro difference is 0.5, the question mean 1/3.
    alias, snp = ["a0", "a1"], ["s0", "s1", "s2", "s3"]
    right = {"a / genegpt-slim": set(), "a / fc": set(alias), "a / bare": set()}
    scores = {
        (run, task, "extracted"): {q: float(q in hits) for q in qids}
        for run, hits in right.items()
        for task, qids in (("Gene alias", alias), ("SNP location", snp))
    }
    protocols = pd.DataFrame(
        {"run": ["a / genegpt-slim", "a / fc", "a / bare"], "benchmark": "geneturing",
         "macro": [0.0, 0.5, 0.0]}
    )  # fmt: skip
    tests = protocol_tests(plan, _index(scores, "geneturing"), protocols)
    assert {(r.run_a, r.run_b) for r in tests.itertuples()} == {
        ("a / genegpt-slim", "a / fc"),
        ("a / genegpt-slim", "a / bare"),
        ("a / fc", "a / bare"),
    }
    fc_bare = tests[(tests.run_a == "a / fc") & (tests.run_b == "a / bare")].iloc[0]
    assert (fc_bare.protocol_a, fc_bare.protocol_b) == ("function calling", "no tools")
    assert fc_bare.n == 6 and fc_bare.difference == 0.5  # macro, not the question mean
    assert tests.p_holm.notna().all()

    record = {"error": None, "wall_s": 2.0, "events": [
        {"type": "model", "data": {"prompt_tokens": 90, "completion_tokens": 10}},
        {"type": "tool", "data": {"error": None}},
        {"type": "tool", "data": {"error": "esearch needs term"}},
    ]}  # fmt: skip
    facts = {t: task_facts([dict(record, question_id="x", finished_at=1.0)]) for t in plan.tasks}
    summary = _summary(
        [("a", m, "geneturing", "macro", "extracted", v, None) for m, v in
         (("genegpt-slim", 0.0), ("fc", 0.5), ("bare", 0.0))]
    )  # fmt: skip
    table = protocol_table(plan, summary, facts)
    assert list(table.run) == ["a / genegpt-slim", "a / fc", "a / bare"]
    assert list(table.protocol) == ["text protocol", "function calling", "no tools"]
    fc = table[table.run == "a / fc"].iloc[0]
    assert (fc.macro, fc.metric, fc.questions, fc.tool_calls_per_question) == (
        0.5,
        "extracted",
        2,
        2.0,
    )
    assert (fc.tool_errors, fc.tokens_per_question, fc.s_per_question) == (2, 100, 2.0)


def test_a_weighted_paired_test_is_the_plain_one_with_equal_weights():
    from helixbench.stats import paired_test

    a = {f"q{i}": float(i % 3 == 0) for i in range(30)}
    b = {f"q{i}": float(i % 2 == 0) for i in range(30)}
    weighted, plain = paired_test(a, b, weights=dict.fromkeys(a, 0.2)), paired_test(a, b)
    assert weighted.difference == pytest.approx(plain.difference)
    assert (weighted.p_value, weighted.n) == (plain.p_value, plain.n)


def test_a_macro_comparison_is_the_test_and_interval_of_its_weighted_questions():
    """The headline's pair, weighed once: the same test and interval, to the bit, as the
    weighted test and its inversion computed apart (graded and right/wrong scores)."""
    from helixbench.report.records import _macro_weighted, macro_comparison
    from helixbench.stats import paired_interval, paired_test

    a1 = {f"t1.{i:02d}": (i * 7 % 10) / 10 for i in range(25)}
    b1 = {f"t1.{i:02d}": (i * 3 % 10) / 10 for i in range(25)} | {"t1.only_b": 1.0}
    a2 = {f"t2.{i:02d}": float(i % 3 == 0) for i in range(12)}
    b2 = {f"t2.{i:02d}": float(i % 2 == 0) for i in range(12)}
    paired = {
        task: (of_a, of_b, sorted(set(of_a) & set(of_b)))
        for task, of_a, of_b in (("t1", a1, b1), ("t2", a2, b2))
    }
    test, interval = macro_comparison(paired)
    score_a, score_b, weights = _macro_weighted(paired)
    assert test == paired_test(score_a, score_b, weights=weights)
    assert interval == paired_interval(score_a, score_b, weights=weights)
    assert test.n == interval.n == 37 and interval.low < interval.mean < interval.high


def test_a_score_job_imports_a_runs_share_of_the_report_not_the_join():
    """The report package loads a module when asked: a run's summary needs neither the
    join (report.build) nor the figures (matplotlib)."""
    import subprocess
    import sys

    code = (
        "import sys, helixbench.report.run_share.run_summary, helixbench.report.run_share.details\n"
        "import helixbench.scoring.batch, helixbench.scoring.run_scores\n"
        "print(sorted(m for m in sys.modules if m in {'helixbench.report.build',"
        " 'helixbench.report.page.figures', 'matplotlib'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    from helixbench.report import write_report
    from helixbench.report.build import write_report as built

    assert write_report is built


def test_a_snp_function_answer_found_in_a_tool_reply_is_typed_e3():
    """The SNP gene function evidence (the gold's cleaned text in a reply) is reached
    whenever that task's first scorer is a correctness scorer."""
    from helixbench.report.tables.taxonomy import classify

    gold = "The SNP is in an intron of the gene (intron variant)."
    reply = "dbSNP says: the snp is in an intron of the gene . (intron variant) on chr1"
    call = {"url": "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esummary.fcgi?db=snp&id=1"}
    record = {"error": None, "events": [{"type": "tool", "data": {**call, "rendered": reply}}]}
    assert classify("SNP gene function", record, gold) == "E3"
    assert classify("SNP gene function", {**record, "events": []}, gold) == "E1"


def test_the_headline_compares_best_with_next_and_each_model_with_its_no_tools_baseline():
    from helixbench.report.tables.headline import headline_sentence, headline_table
    from helixbench.report.text import fmt

    chat = {"backend": "openai", "model": "x", "base_url": "http://localhost:1/v1", "api": "chat"}
    config = {
        "models": {"a": chat, "b": chat},
        "benchmarks": ["geneturing"],
        "runs": [
            {"model": "a", "methods": ["function-calling", "no-tools"], "tasks": ["Gene alias"]},
            {"model": "b", "method": "function-calling", "tasks": ["Gene alias"]},
        ],
    }
    plan = build_plan(config, None)
    right = {f"q{i}": 1.0 for i in range(10)}
    index = {
        ("a / function-calling", "Gene alias", "extracted"): right,
        ("b / function-calling", "Gene alias", "extracted"): {**right, "q0": 0.0, "q1": 0.0},
        ("a / no-tools", "Gene alias", "extracted"): {q: float(q < "q3") for q in right},
    }
    board = pd.DataFrame(
        {"benchmark": "geneturing", "run": ["a / function-calling", "b / function-calling"]}
    )
    rows = headline_table(plan, _index(index, "geneturing"), board, pd.DataFrame())
    rows = rows.to_dict("records")
    assert [(r["comparison"], r["run_a"], r["run_b"]) for r in rows] == [
        ("best vs next", "a / function-calling", "b / function-calling"),
        ("vs its no-tools baseline", "a / function-calling", "a / no-tools"),
    ]
    baseline = rows[1]
    assert (baseline["macro_a"], baseline["macro_b"], baseline["difference"]) == (1.0, 0.3, 0.7)
    assert 0 < baseline["ci_low"] <= 0.7 <= baseline["ci_high"] <= 1 and baseline["n"] == 10
    said = headline_sentence(baseline, fmt)
    assert said.startswith("a / function-calling is ahead of a / no-tools by 0.700 [")


def test_the_per_question_view_shows_the_start_of_a_runaway_text():
    from helixbench.report.run_share.details import MAX_TEXT_CHARS, shown_text

    prompt = "x" * (MAX_TEXT_CHARS + 5)
    events = [{"type": "model", "data": {"prompt_increment": prompt, "tool_calls": ["ok"]}}]
    (shown,) = shown_text(events)
    text = shown["data"]["prompt_increment"]
    assert text.startswith("x" * MAX_TEXT_CHARS) and text.endswith(
        "[... 5 more characters in results/runs/]"
    )
    assert shown["data"]["tool_calls"] == ["ok"] and shown_text(None) is None
    # A text at the cut is whole; past it, one of characters JSON writes in more bytes
    # is cut as well; a value with nothing to cut comes back as it is.
    whole = {"a": ["y" * MAX_TEXT_CHARS], "b": "z"}
    assert shown_text(whole) == whole
    (cut,) = shown_text([{"data": "é" * (MAX_TEXT_CHARS + 1)}])
    assert cut["data"].endswith("[... 1 more characters in results/runs/]")
    small = [{"type": "tool", "data": {"url": "u"}}]
    assert shown_text(small) is small


def test_an_originals_prompts_are_paired_by_digest_not_by_cache_hits():
    """prompts_shared: the calls of an agent run whose prompt another run of the same
    model sent on the same question; other models' and other questions' do not count."""
    from helixbench.report.tables.operations import with_shared_prompts

    agents = pd.DataFrame([{"model": "m", "method": "main-py", "prompts_shared": 0}])
    prompts = {
        ("m", "main-py"): {"q1": ["a", "b"], "q2": ["c"]},
        ("m", "genegpt"): {"q1": ["a", "b"], "q2": ["x"]},
        ("n", "genegpt"): {"q2": ["c"]},  # another model
        ("m", "other"): {"q3": ["c"]},  # another question
    }
    summaries = {f"{m} / {k}": {"model": m, "method": k} for m, k in prompts}
    read = []

    def prompts_of(label):
        read.append(label)
        return prompts[tuple(label.split(" / "))]

    assert with_shared_prompts(agents, summaries, prompts_of).prompts_shared.tolist() == [2]
    assert "n / genegpt" not in read  # (another model's digests are never read)


def test_no_text_of_a_run_can_end_the_bundled_pages_script(tmp_path):
    """The page's copy for Snakemake's report holds each run's file inside a script:
    a run's answer that reads ``</script>`` or opens a comment stays a string, and a
    run past the page's size limit is left to runs/."""
    from types import SimpleNamespace

    from helixbench.report.run_share.details import (
        CALLBACK,
        inline_run_scripts,
        read_details,
        write_details,
    )

    data = {"run": "m</script> / x", "questions": [{"answer": "</script><!-- <b>bold</b>"}]}
    details = tmp_path / "details.js"
    write_details(details, data)
    assert read_details(details) == data
    plan = SimpleNamespace(runs=[SimpleNamespace(details_path=str(details))] * 2)
    (script,) = inline_run_scripts(plan, max_bytes=details.stat().st_size + 10)
    assert "<" not in script and script.startswith(f'{CALLBACK}("')
    inlined = tmp_path / "inlined.js"
    inlined.write_text(script.replace("\\u003c", "<"))  # (as the page's script reads it)
    assert read_details(inlined) == data
    assert len(inline_run_scripts(plan)) == 2


def test_a_runs_question_file_holds_its_own_fields_and_the_page_puts_back_the_rest(tmp_path):
    """A run's file keeps what is the run's own, a column a field: the questions'
    texts and golds are the page's (once for all runs), a model call's text that is the
    question or the answer is a flag; unpacked with the page's facts, it is the rows
    the summary job made, texts that only look alike included."""
    from types import SimpleNamespace

    from helixbench.report.run_share.details import (
        packed,
        question_facts,
        read_details,
        unpacked,
        write_details,
    )

    def question(qid, task, text, gold):
        return SimpleNamespace(id=qid, benchmark="b", task=task, text=text, gold_text=gold)

    questions = {
        q.id: q
        for q in [
            question("b.t.000", "t", "What is the official gene symbol of LMP10?", "PSMB10"),
            question("b.t.001", "t", "Which chromosome is TP53 on?", "17"),
            question("b.u.000", "u", "Not asked in this plan", "x"),
        ]
    }
    plan = SimpleNamespace(tasks=[SimpleNamespace(benchmark="b", task="t")])
    facts = question_facts(plan, questions)
    assert facts["id"] == ["b.t.000", "b.t.001"] and facts["gold"] == ["PSMB10", "17"]

    def model(index, prompt, completion):
        data = {"prompt_increment": prompt, "completion": completion, "cache": "miss"}
        return {"type": "model", "index": index, "data": data}

    tool = {"type": "tool", "index": 0, "data": {"url": "https://x", "completion": "17"}}
    rows = [
        {
            "id": "b.t.000", "task": "t", "text": questions["b.t.000"].text, "gold": "PSMB10",
            "answer": "Answer: PSMB10", "error": None, "metric": "genegpt", "score": 1.0,
            "status": "right", "type": None, "header": None,
            "events": [model(0, questions["b.t.000"].text, "Answer: PSMB10")],
        },
        {
            "id": "b.t.001", "task": "t", "text": questions["b.t.001"].text, "gold": "17",
            "answer": "17", "error": "timeout", "metric": "genegpt", "score": None,
            "status": "wrong", "type": "no answer", "header": "ab" * 32,
            "events": [
                model(0, questions["b.t.001"].text + " ", "Answer: 17"),  # (alike, not same)
                tool,  # (a tool's field named like a model call's stays as it is)
                model(1, "Answer: 17", "17"),
            ],
        },
    ]  # fmt: skip
    details = {"run": "m / x", "headers": {"ab" * 32: "header"}, "questions": rows}
    path = tmp_path / "run.js"
    write_details(path, packed(details))
    stored = read_details(path)
    assert unpacked(stored, facts) == details
    assert "LMP10" not in json.dumps(stored) and "PSMB10" in json.dumps(stored)  # (its answer)
    events = stored["questions"]["events"]
    assert events[0][0]["data"] == {
        "prompt_increment_is_text": True, "completion_is_answer": True, "cache": "miss"
    }  # fmt: skip
    assert events[1][1] == tool and events[1][0]["data"]["prompt_increment"].endswith("? ")


def test_the_leaderboard_figure_draws_at_most_twice_its_top_runs_of_a_tie(tmp_path):
    """A sweep of like systems ties by the hundred: the figure draws the first
    2 x TOP_RUNS of a benchmark (a bar each) and counts the rest, not 300 bars."""
    import struct

    from helixbench.report.page.figures import TOP_RUNS, leaderboard_figure

    def board(runs: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "run": [f"m{i} / no-tools" for i in range(runs)],
                "benchmark": "geneturing",
                "rank": 1,
                "extracted": 0.5,
                "genegpt": 0.4,
                "ci_low": 0.45,
                "ci_high": 0.55,
                "partial": False,
                "imported": False,
                "tasks": 9,
                "benchmark_tasks": 9,
                "answers": 450,
            }
        )

    def height(runs: int) -> int:
        out = tmp_path / str(runs)
        out.mkdir()
        leaderboard_figure(board(runs), out)
        return struct.unpack(">II", (out / "leaderboard.png").read_bytes()[16:24])[1]

    assert height(300) == height(2 * TOP_RUNS) > height(TOP_RUNS)


def test_a_runs_page_file_leaves_out_what_the_page_never_shows():
    """A model call's prompt digest, size and token counts stay in the records, not in
    the run's page file; what the page shows of it, and every other event, is kept."""
    from helixbench.report.run_share.details import UNSHOWN_MODEL_FIELDS, page_events

    shown = {"prompt_increment": "Q?", "completion": "Answer: A", "cache": "miss", "error": None}
    call = {"prompt_sha256": "ab" * 32, "prompt_chars": 900, "prompt_tokens": 200}
    call |= {"completion_tokens": 3, "reused_tokens": None, "finish_reason": "stop"}
    call |= {"continues_previous": False}
    assert set(call) == UNSHOWN_MODEL_FIELDS
    tool = {"type": "tool", "index": 0, "data": {"url": "u", "status": 200, "prompt_chars": 1}}
    events = [{"type": "model", "index": 0, "data": {**shown, **call}, "latency_s": 0.4}, tool]
    assert page_events(events) == [
        {"type": "model", "index": 0, "data": shown, "latency_s": 0.4},
        tool,
    ]


def test_a_runs_question_file_is_linked_from_where_the_page_is_opened(tmp_path, monkeypatch):
    """The page reads a run's file where its score job wrote it: a config's report
    (results/reports/<key>, opened through the results/report link) links it as
    ../summaries/..., a report written elsewhere relative to its own folder; a name's
    reserved characters percent-encoded."""
    from types import SimpleNamespace

    from helixbench.report.run_share.details import details_link, opened_in

    monkeypatch.chdir(tmp_path)
    run = SimpleNamespace(details_path="results/summaries/org/m#1/no-tools/ab12/details.js")
    kept = tmp_path / "results" / "reports" / "0123abcd"
    expected = "../summaries/org/m%231/no-tools/ab12/details.js"
    for out_dir in (kept, "results/reports/0123abcd"):
        assert details_link(run, opened_in(out_dir)) == expected
    elsewhere = "../results/summaries/org/m%231/no-tools/ab12/details.js"
    assert details_link(run, opened_in(tmp_path / "report")) == elsewhere
