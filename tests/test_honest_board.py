"""Rankings a reader cannot misread: exact intervals that are never a point, runs on
fewer questions listed apart, ties as ties, each model against its own twin without
tools, imports refused when they are not of their format's shape, and numbers read
from answers as a careful grader reads them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import binomtest

from helixbench.config import ConfigError, build_plan
from helixbench.datasets.questions import Question
from helixbench.errors import DataError
from helixbench.report.tables.bank_board import answer_shares, rank_bank
from helixbench.scoring.answer_numbers import stated_numbers
from helixbench.scoring.labbench2 import value_verdict
from helixbench.sources.checks import bixbench_rows, labbench2_report
from helixbench.stats import macro_interval, mean_interval, paired_interval


def test_a_share_gets_its_exact_interval_never_a_point():
    """0 of 14 right is [0, 0.232], as SciPy's exact interval says; all right or all
    wrong is never zero-width; one task's macro is its share's interval; a macro of
    shares is exact on its effective count; a graded constant is widened to the exact
    interval of a share with its mean; two identical runs differ by a non-point."""
    none = mean_interval([0.0] * 14)
    assert none.low == 0 and none.high == pytest.approx(0.2316, abs=1e-4)
    for right, n in ((5, 17), (0, 14), (14, 14), (1, 2), (300, 1000)):  # SciPy's own
        exact = binomtest(right, n).proportion_ci(0.95, method="exact")
        found = mean_interval([1.0] * right + [0.0] * (n - right))
        assert found.low == pytest.approx(exact.low, abs=1e-12)
        assert found.high == pytest.approx(exact.high, abs=1e-12)
    for n in (1, 2, 14, 200):
        for value in (0.0, 1.0):
            interval = mean_interval([value] * n)
            assert interval.high - interval.low > 0, (n, value)
            macro = macro_interval({"a": [value] * n, "b": [value] * (n + 3)})
            assert 0 <= macro.low < macro.high <= 1 and macro.low <= value <= macro.high
    assert macro_interval({"a": [0.0] * 14}) == none
    # Equal task sizes: the effective count is the whole count.
    pooled = mean_interval([1.0] * 6 + [0.0] * 14)
    split = macro_interval({"a": [1.0] * 3 + [0.0] * 7, "b": [1.0] * 3 + [0.0] * 7})
    assert split.low == pytest.approx(pooled.low) and split.high == pytest.approx(pooled.high)
    graded = mean_interval([0.5] * 20)
    assert graded.low < 0.5 < graded.high
    same = paired_interval(
        {str(i): float(i % 2) for i in range(20)}, {str(i): float(i % 2) for i in range(20)}
    )
    assert same.mean == 0 and same.low < 0 < same.high


def _board(rows):
    columns = ["run", "benchmark", "macro", "ci_low", "ci_high", "asked", "scored", "tasks"]
    return pd.DataFrame([dict(zip(columns, r, strict=True)) for r in rows])


def test_a_sample_is_listed_apart_and_ties_share_a_rank():
    board = rank_bank(
        _board(
            [
                ("tiny", "b", 0.5, 0.01, 0.99, 14, 2, 1),  # the best score, on 2 questions
                ("a", "b", 0.2, 0.1, 0.3, 300, 300, 2),
                ("c", "b", 0.3, 0.2, 0.4, 300, 300, 2),
                ("tied", "b", 0.2, 0.1, 0.3, 300, 300, 2),
                ("fewer tasks", "b", 0.9, 0.8, 0.95, 150, 150, 1),
            ]
        )
    )
    assert list(board.run) == ["c", "a", "tied", "fewer tasks", "tiny"]
    assert list(board["rank"].astype(object)) == [1, 2, 2, pd.NA, pd.NA]
    assert list(board.partial) == [False, False, False, True, True]
    assert list(board.coverage) == [1.0, 1.0, 1.0, 0.5, round(2 / 300, 7)]
    assert (board.compared == 300).all() and (board.benchmark_tasks == 2).all()


def test_empty_and_unreadable_replies_are_counted_apart():
    records = [
        {"answer": "B", "events": []},
        {"answer": None, "events": [{"type": "model", "data": {"completion": "I think so"}}]},
        {"answer": "", "events": [{"type": "model", "data": {"completion": "  "}}]},
        {"answer": None, "events": []},  # (an imported question its source lacks)
    ]
    assert answer_shares(records) == {"asked": 4, "empty": 0.5, "unparsed": 0.25}


def test_numbers_are_read_as_a_careful_grader_reads_them():
    assert stated_numbers("\u22120.216") == [-0.216]
    assert stated_numbers("three (researchgate.net/publication/371971592_Gene)") == [3.0]
    assert stated_numbers("1,234,567 reads, see [3] and (Smith et al., 2020)") == [1234567.0]
    assert stated_numbers("1.2 × 10^-5") == [1.2e-05] and stated_numbers("twenty-one") == [21]
    assert stated_numbers("rs12345 on chr8, doi:10.1038/nature12373, PMID: 123") == []
    assert stated_numbers("5-10 bp") == [5.0, 10.0] and stated_numbers("37°C") == [37.0]

    def ask(task, gold, answer, subtype=None):
        return value_verdict(Question.at("labbench2", task, 0, "q", gold, subtype=subtype), answer)

    assert ask("litqa3/inject", "-0.216", "The value is \u22120.216.")[0] == 1.0
    cited = "There were three (researchgate.net/publication/371971592_Mouse_study)."
    assert ask("litqa3/inject", "3", cited)[0] == 1.0
    score, reason = ask(
        "seqqa2/inject", "300,500", "<answer>300, 502</answer>", "restriction_digest"
    )
    assert score == 0.0 and "off by 2" in reason and "allows 1" in reason
    score, reason = ask(
        "seqqa2/inject", "300,500", "<answer>301, 500</answer>", "restriction_digest"
    )
    assert score == 1.0 and "each within 1" in reason


def _bix_csv(path: Path, columns: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def test_an_import_of_the_wrong_shape_is_one_line_naming_the_file(tmp_path):
    """A LABBench2 report of the wrong shape, truncated or nested 10,000 deep, and a
    BixBench CSV with a missing column: each refused in one line naming the file, where
    a job reads it; a 2 MB cell is read."""
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"results": [{"q": 1}]}))
    cut = tmp_path / "cut.json"
    cut.write_text('{"cases": [{"id": "a", "scores": {')
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    no_id = tmp_path / "no_id.json"
    no_id.write_text(json.dumps({"cases": [{"question": "q"}]}))
    for path, said in (
        (wrong, "no 'cases' or 'failures'"),
        (cut, "truncated"),
        (deep, "nested deeper"),
        (no_id, "'id' is a required property"),
    ):
        with pytest.raises(DataError) as caught:
            labbench2_report(path)
        assert str(path) in str(caught.value) and said in str(caught.value)
        assert "\n" not in str(caught.value)
    columns = _bix_csv(tmp_path / "cols.csv", ["id", "question", "answer"], [["1", "q", "a"]])
    with pytest.raises(DataError, match=r"cols\.csv: not a BixBench graded CSV \(no column target"):
        bixbench_rows(columns)
    big = _bix_csv(
        tmp_path / "big.csv",
        ["uuid", "question", "target", "grade"],
        [["x", "a" * (2 << 20), "t", "1"]],
    )
    assert len(bixbench_rows(big)[0]["question"]) == 2 << 20


def _bixbench_config(reports: dict) -> dict:
    return {
        "benchmarks": ["bixbench-mcq", "bixbench-open"],
        "tools": {"mode": "offline"},
        "models": {"mine": {"backend": "imported", "source": {
            "format": "bixbench", "model": "Mine", "reports": reports}}},
        "runs": [{"model": "mine", "method": "imported"}],
    }  # fmt: skip


def test_imports_are_checked_at_plan_time_and_key_order_shapes_nothing(mirror, tmp_path):
    columns = ["uuid", "question", "target", "grade", "predicted", "unsure", "sure"]
    files = {
        task: str(
            _bix_csv(tmp_path / f"{i}.csv", columns, [["u1", "q", "A", "1", "A", "", "False"]])
        )
        for i, task in enumerate(("v1.5/open", "v1.5/mcq-refusal", "v1.5/mcq"))
    }
    one = build_plan(_bixbench_config(files), mirror)
    other = build_plan(_bixbench_config(dict(sorted(files.items()))), mirror)
    assert [r.variant for r in one.runs] == [r.variant for r in other.runs]
    bad = _bix_csv(tmp_path / "bad.csv", ["id", "question"], [["1", "q"]])
    with pytest.raises(ConfigError) as caught:
        build_plan(_bixbench_config({**files, "v1.5/mcq": str(bad)}), mirror)
    message = str(caught.value)
    assert message.startswith("models.mine.source.reports: ") and str(bad) in message


def test_imported_bare_runs_are_the_baselines_of_their_tools_twins(mirror):
    """LABBench2's bare and tools,high runs of one model: the headline compares them, and
    a run of ours with the best published run."""
    from helixbench.report.tables.headline import _pairs

    systems = ("gpt-5-2", "claude-opus-4-5")
    models = {s: {"backend": "imported", "source": f"labbench2/{s}"} for s in systems}
    config = {
        "benchmarks": ["labbench2"],
        "tools": {"mode": "offline"},
        "models": {**models, "mine": {"backend": "openai", "api": "chat", "model": "m",
                                  "base_url": "http://127.0.0.1:9/v1"}},
        "methods": {"bare": {"kind": "imported"},
                    "tools": {"kind": "imported", "flags": "tools,high"},
                    "no-tools": {"kind": "no-tools"}},
        "runs": [{"models": list(systems), "methods": ["bare", "tools"]},
                 {"model": "mine", "method": "no-tools", "sample": 1}],
    }  # fmt: skip
    plan = build_plan(config, mirror)
    ranked = [
        "gpt-5-2 / tools",
        "claude-opus-4-5 / tools",
        "gpt-5-2 / bare",
        "claude-opus-4-5 / bare",
    ]
    pairs = _pairs(plan, ranked, "labbench2", ["mine / no-tools"])
    assert ("vs its bare baseline", "gpt-5-2 / tools", "gpt-5-2 / bare") in pairs
    assert ("vs its bare baseline", "claude-opus-4-5 / tools", "claude-opus-4-5 / bare") in pairs
    assert ("vs the best published run", "mine / no-tools", "gpt-5-2 / tools") in pairs
    assert pairs[0] == ("best vs next", "gpt-5-2 / tools", "claude-opus-4-5 / tools")


def test_no_field_of_a_file_reaches_report_md_as_markup():
    """An imported file's fields (a LABBench2 report's `model`) are text in report.md:
    their HTML shown, never passed through; a | does not end the cell."""
    from helixbench.report.text import md_escape, md_table

    shown = md_table(pd.DataFrame({"system": ['<img src=x onerror="alert(1)">|x', "a & b"]}))
    assert "<img" not in shown and "&lt;img" in shown and "\\|x" in shown and "a &amp; b" in shown
    assert md_table(pd.DataFrame({"m": [md_escape("<b>bold</b>")]})).count("&amp;") == 0
