"""Report tables from hand-made plans and records (the workflow tests run them end to end)."""

from __future__ import annotations

import pandas as pd

from helixbench.config import build_plan
from helixbench.report.html import html_table
from helixbench.report.operations import cost_table, model_error_notes


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


def test_runs_holding_model_errors_are_warned_about():
    plan = _plan()
    alias, snp = plan.tasks
    failed = {"cache": "miss", "error": "HTTP 401 (invalid_api_key): Incorrect API key"}
    records = {
        alias: [_record("a"), _record("b", "model_error", [(failed, 0.1)])],
        snp: [_record("c", "model_error", [(failed, 0.1)])],
    }
    (note,) = model_error_notes(plan, records)
    assert note["level"] == "warning" and (note["model"], note["method"]) == ("m", "genegpt-slim")
    assert note["message"].startswith("2 of 3 questions ended in a model error")
    assert "Incorrect API key" in note["message"]
    assert model_error_notes(plan, {alias: [_record("a")], snp: []}) == []


def test_html_tables_show_a_missing_value_as_blank():
    html = str(html_table(pd.DataFrame({"cost_usd": [None, 0.5], "model": ["a", None]})))
    assert "None" not in html and "nan" not in html.lower() and "0.5" in html
