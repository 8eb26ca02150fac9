"""The Snakemake workflow end to end, offline, from the mirror; and config validation."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
import yaml

from helixbench import paths
from helixbench.config import ConfigError, build_plan, config_hash
from helixbench.datasets.jsonfiles import read_jsonl, read_text
from helixbench.datasets.snapshots import Snapshot
from helixbench.loopback.ncbi import NCBIServer
from helixbench.loopback.openai import OpenAIServer

from .conftest import REPO_ROOT, run_snakemake
from .support import chromium
from .support.geneset_servers import GeneSetServer
from .test_upstream_scorer import REFERENCE

DEFAULT_CONFIG = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())


def snakemake(workdir: Path, config: dict, *args: str, mirror: Path | None = None):
    env = {**os.environ}
    if mirror is not None:
        env["HELIXBENCH_MIRROR"] = str(mirror)
    return run_snakemake(workdir, config, "--cores", "2", *args, env=env)


def paper_config() -> dict:
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    # The paper's runs only: the SmolLM2 run of the default config is the CI main job's.
    config["runs"] = [r for r in config["runs"] if r["model"] == "codex"]
    # Upstream recorded mask 000001, but the mirror lacks it: left out with a warning.
    config["runs"].append(
        {"model": "codex", "method": "genegpt-000001", "benchmarks": ["geneturing"]}
    )
    # The per-question table as CSV too, and every run in Every Eval Ever's format.
    config["report"] = {"question_scores_csv": True, "exports": ["every-eval-ever"]}
    # Who publishes it: the crate's publisher (RO-Crate recommends one).
    config["report"]["publisher"] = {
        "name": "A. Researcher",
        "id": "https://orcid.org/0000-0002-1825-0097",
    }
    return config


# The tests that read the one workflow run of paper_run: pytest-xdist keeps them in
# one test process, so the run is made once.
PAPER_RUN = pytest.mark.xdist_group("paper_run")


@pytest.fixture(scope="session")
def paper_run(mirror, tmp_path_factory):
    """The default config's replayed runs through the workflow, once: session-scoped,
    because a module-scoped one is made again whenever a test of another module runs
    between two of this group on the same pytest-xdist process."""
    workdir = tmp_path_factory.mktemp("paper")
    done = snakemake(workdir, paper_config(), mirror=mirror)
    assert done.returncode == 0, done.stderr[-3000:]
    (workdir / "console.txt").write_text(done.stdout + done.stderr)
    return workdir


@pytest.mark.slow
@pytest.mark.workflow
@PAPER_RUN
def test_the_console_shows_progress_warnings_and_the_ending(paper_run):
    """helixbench's console (the default profile's logger): a line a stage, the
    shards' progress, the warning of the recording the mirror lacks, the ending; the
    job blocks are in Snakemake's log."""
    lines = (paper_run / "console.txt").read_text().splitlines()
    assert len(lines) < 150 and max(map(len, lines)) <= 300, (len(lines), lines[:20])
    text = "\n".join(lines)
    assert "upstream files fetched: " in text and "] report written" in text
    assert "[progress] codex / genegpt-slim shard-0-of-2: " in text
    assert "000001" in text  # the warning
    assert "Leaderboard, geneturing" in text and "Complete log(s): " in text
    assert "input: " not in text and "Finished jobid" not in text
    (log,) = (paper_run / ".snakemake" / "log").glob("*.snakemake.log")
    assert "rule run_shard:" in log.read_text()  # all of it, there


@pytest.mark.workflow
@PAPER_RUN
def test_default_workflow_reproduces_the_paper(mirror, paper_run):
    tmp_path, config = paper_run, paper_config()
    report = tmp_path / "results" / "report"

    rows = read_csv(report / "scores.csv.gz")
    assert list(rows[0]) == [
        "benchmark",
        "task",
        "model",
        "method",
        "metric",
        "n",
        "score",
        "paper",
        "ci_low",
        "ci_high",
    ]
    scores = {(r["method"], r["task"], r["metric"]): r for r in rows}
    for method, mask in (("genegpt-slim", "001001"), ("genegpt-full", "111111")):
        for task, value in REFERENCE[mask].items():
            row = scores[(method, task, "genegpt")]
            assert abs(float(row["score"]) - value) < 1e-9, (method, task)
            assert row["n"] == "50" and row["paper"] != ""
        macro_row = scores[(method, "macro", "genegpt")]
        assert macro_row["paper"] == {"001001": "0.83", "111111": "0.8"}[mask]  # (whole set)
        assert scores[(method, "macro", "strict")]["paper"] == ""  # (not the paper's metric)
        macro = float(macro_row["score"])
        assert round(macro, 2) == {"001001": 0.83, "111111": 0.80}[mask]
        assert float(macro_row["ci_low"]) <= macro <= float(macro_row["ci_high"])
    dgl = scores[("genegpt-101110", "Disease gene location", "genegpt")]
    assert abs(float(dgl["score"]) - 0.6716667) < 1e-9 and dgl["paper"] == "0.67"
    # The demonstration items are excluded in the second metric.
    assert scores[("genegpt-slim", "Gene alias", "genegpt_excl_demos")]["n"] == "49"

    with open(report / "replay.csv") as fh:
        replay = list(csv.DictReader(fh))
    assert list(replay[0]) == [
        "model",
        "method",
        "benchmark",
        "task",
        "calls",
        "hits",
        "misses",
        "max_calls",
        "url_rule",
    ]
    assert len(replay) == 20
    # The loop each recording was made with: no question of these hit a cap of 5.
    assert {(r["max_calls"], r["url_rule"]) for r in replay} == {("10", "first")}
    assert all(r["calls"] == r["hits"] and r["misses"] == "0" for r in replay)
    assert sum(int(r["calls"]) for r in replay) == 2976

    text = (report / "report.md").read_text()
    assert "genegpt-000001" in text and "mirror" in text and "**warning**" in text
    provenance = json.loads((report / "provenance.json").read_text())
    assert provenance["config_sha256"] == config_hash(provenance["config"])
    assert len(provenance["snapshots"]) == 20
    assert all(u["sha256"] == u["pinned"] for u in provenance["upstream"])

    again = snakemake(tmp_path, config, "--dry-run", mirror=mirror)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def read_csv(path: Path) -> list[dict]:
    """A report's table, a long one's gzip inflated (paths.LONG_TABLES)."""
    return list(csv.DictReader(io.StringIO(read_text(path))))


@pytest.mark.workflow
@PAPER_RUN
def test_report_sections_from_the_replayed_runs(paper_run):
    report = paper_run / "results" / "report"
    scores = {(r["method"], r["task"], r["metric"]): r for r in read_csv(report / "scores.csv.gz")}

    # Strict beside upstream: no half credit for the right chromosome, but any list
    # separator; and GeneHop's hand-judged task scored by ROUGE and embeddings.
    def score(method, task, metric):
        return float(scores[(method, task, metric)]["score"])

    assert score("genegpt-slim", "Human genome DNA aligment", "strict") < 0.44
    assert score("genegpt-slim", "Gene disease association", "strict") > 0.6613333
    for metric in ("rougeL", "rouge1", "rouge2", "embedding"):
        row = scores[("genegpt-101110", "SNP gene function", metric)]
        assert row["n"] == "50" and 0 < float(row["score"]) < 1

    pairs = read_csv(report / "comparisons.csv.gz")
    slim_full = {
        r["task"]: r
        for r in pairs
        if (r["run_a"], r["run_b"]) == ("codex / genegpt-slim", "codex / genegpt-full")
    }
    assert len(slim_full) == 9
    coding = slim_full["Protein-coding genes"]
    assert float(coding["difference"]) == pytest.approx(0.24) and float(coding["p_value"]) < 0.01
    assert float(slim_full["Gene name conversion"]["p_value"]) == 1.0  # identical scores

    taxonomy = {(r["method"], r["task"]): r for r in read_csv(report / "taxonomy.csv.gz")}
    alias = taxonomy[("genegpt-slim", "Gene alias")]
    kinds = ("E1", "E2", "E3", "E4", "O")
    assert int(alias["wrong"]) == 8 == sum(int(alias[k]) for k in kinds)  # 0.84 of 50
    markdown = (report / "report.md").read_text()
    assert "Error types (Table 4)" in markdown and "typed errors" in markdown

    for name in ("leaderboard", "ablation"):
        assert (report / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (report / f"{name}.svg").read_text()
    ablation = read_csv(report / "ablation.csv")
    assert {r["mask"] for r in ablation} == {"001001"} and len(ablation) == 9
    board = read_csv(report / "leaderboard.csv")
    assert board[0]["run"] == "codex / genegpt-slim"  # sorted by macro score


@pytest.mark.slow
@pytest.mark.workflow
def test_published_systems_on_one_leaderboard(mirror, tmp_path):
    """config/examples/published.yaml: the imported runs (the replayed GeneGPT runs of
    the example are the paper run's, whose extracted scores equal upstream's: tested
    over every mirrored recording in test_imports)."""
    config = yaml.safe_load((REPO_ROOT / "config" / "examples" / "published.yaml").read_text())
    config["runs"] = [r for r in config["runs"] if r.get("method") == "imported"]
    config["benchmarks"] = ["geneturing"]  # GeneHop's imports: test_imports
    done = snakemake(tmp_path, config, mirror=mirror)
    assert done.returncode == 0, done.stderr[-3000:]
    report = tmp_path / "results" / "report"
    board = read_csv(report / "leaderboard.csv")
    geneturing = [r for r in board if r["benchmark"] == "geneturing"]
    extracted = [float(r["extracted"]) for r in geneturing]
    assert extracted == sorted(extracted, reverse=True) and len(geneturing) == 3
    rows = {r["run"]: r for r in geneturing}
    qwen = rows["qwen2.5-32b-full / imported"]
    assert qwen["imported"] == "True" and qwen["source"] == "openbiollm/pre_qwen32b"
    assert float(qwen["extracted"]) > float(qwen["genegpt"]) and int(qwen["badly_formatted"]) > 0
    imports = read_csv(report / "imports.csv")
    assert len(imports) == 3 * 9
    assert all(r["matched"] == r["questions"] == "50" for r in imports)
    markdown = (report / "report.md").read_text()
    assert "## Imported runs" in markdown and "the source claims 0.839" in markdown
    html = (report / "index.html").read_text()
    assert 'id="imported-table"' in html and "imported: openbiollm/pre_qwen32b" in html
    # Imported transcripts enter the error taxonomy like our own runs.
    taxonomy = read_csv(report / "taxonomy.csv.gz")
    assert {"qwen2.5-32b-full", "gpt-4.1-tools"} <= {r["model"] for r in taxonomy}
    formatting = sum(int(r["F"]) for r in taxonomy if r["model"] == "qwen2.5-32b-full")
    assert formatting == int(qwen["badly_formatted"])  # typed F, not E1-E4


@pytest.mark.workflow
@PAPER_RUN
def test_statistics_are_those_of_one_draw_per_interval_and_test(paper_run):
    """Every interval of scores.csv is its method's, computed independently here: a
    share of right answers the exact Clopper-Pearson interval (a macro of shares on its
    effective number of questions), a graded score the bootstrap drawn once per size
    and seed as matrix products, equal to drawing each resample anew (the report's code
    before); no interval is a point. The tests' p-values likewise, on the default
    config's runs."""
    import numpy as np
    import pandas as pd
    from scipy.stats import beta

    from helixbench.report.question_scores import read_question_scores

    def interval(groups):  # one generator, the tasks in sorted order, as before
        values = [v for _, v in sorted(groups.items())]
        if all(np.isin(v, (0.0, 1.0)).all() for v in values):  # Clopper-Pearson, by hand
            mean = np.mean([v.mean() for v in values])
            n = len(values) ** 2 / sum(1 / v.size for v in values)
            x = mean * n
            low = 0.0 if x < 1e-12 else beta.ppf(0.025, x, n - x + 1)
            high = 1.0 if x > n - 1e-12 else beta.ppf(0.975, x + 1, n - x)
            return np.round([low, high], 7)
        rng = np.random.default_rng(0)
        means = [v[rng.integers(0, v.size, size=(10_000, v.size))].mean(axis=1) for v in values]
        return np.quantile(np.mean(means, axis=0), [(1 - 0.95) / 2, (1 + 0.95) / 2]).round(7)

    report = paper_run / "results" / "report"
    frame = read_question_scores([report / "question_scores.parquet"])
    summary = pd.read_csv(report / "scores.csv.gz")
    checked = 0
    for row in summary.itertuples():
        metric, demos = row.metric.removesuffix("_excl_demos"), row.metric.endswith("_demos")
        of_run = frame[(frame.run == f"{row.model} / {row.method}") & (frame.metric == metric)]
        of_run = of_run[(of_run.benchmark == row.benchmark) & (of_run.demo.isna() | (not demos))]
        if row.task != "macro":
            of_run = of_run[of_run.task == row.task]
        groups = {t: g.score.to_numpy() for t, g in of_run.groupby("task")}
        if sum(v.size for v in groups.values()) < 10 and not all(
            np.isin(v, (0.0, 1.0)).all() for v in groups.values()
        ):
            assert pd.isna(row.ci_low), row  # (a graded score on too few: none given)
            checked += 1
            continue
        expected = interval(groups)
        if expected[0] == expected[1]:  # (a point bootstrap: widened, never a point)
            assert row.ci_low < row.ci_high, row
        else:
            assert list(expected) == pytest.approx([row.ci_low, row.ci_high], abs=2e-7), row
        assert row.ci_low < row.ci_high, row
        checked += 1
    assert checked == len(summary) > 100
    comparisons = pd.read_csv(report / "comparisons.csv.gz")
    for row in comparisons.itertuples():
        a, b = (
            frame[(frame.run == r) & (frame.task == row.task) & (frame.metric == row.metric)]
            .set_index("question_id")
            .score
            for r in (row.run_a, row.run_b)
        )
        shared = sorted(set(a.index) & set(b.index))
        diffs = a[shared].to_numpy() - b[shared].to_numpy()
        if not diffs.any():
            assert row.p_value == 1.0
            continue
        signs = np.random.default_rng(0).choice((-1.0, 1.0), size=(10_000, diffs.size))
        flipped = np.abs((signs * diffs).mean(axis=1))
        extreme = np.count_nonzero(flipped >= abs(diffs.mean()) - 1e-12)
        assert row.p_value == round((extreme + 1) / 10_001, 4), row


@pytest.mark.workflow
@PAPER_RUN
def test_each_runs_questions_load_on_demand_from_a_file_of_its_own(
    mirror, paper_run, tmp_path, monkeypatch
):
    """Past the size the page loads at once, a run's questions come from the file its
    score job wrote (results/summaries, not copied into the report) when the reader picks
    the run (here by the link's #run=), from file://, no server, whether the page is
    opened through results/report or where that link points."""
    from helixbench.report import build as report

    report_dir = paper_run / "results" / "report"
    html = (report_dir / "index.html").read_text()
    links = dict(re.findall(r'value="([^"]+)" data-file="([^"]+)"', html))
    # (a browser resolves "../" in the link, not the folder results/report links to)
    slim = Path(os.path.normpath(report_dir / unquote(links["codex / genegpt-slim"])))
    (run,) = [r for r in build_plan(paper_config(), mirror).runs if r.method == "genegpt-slim"]
    assert slim == paper_run / run.details_path
    assert not (report_dir / "runs").exists()  # (a gigabyte at 10,000 runs: read in place)
    from helixbench.report.run_share.details import read_details

    text = slim.read_text()
    assert text.startswith('helixbenchRun("') and text.endswith('","codex / genegpt-slim");\n')
    data = read_details(slim)  # (gzip in base64: a fifth of the JSON)
    plain = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    assert len(text) < len(plain) / 3
    assert data["run"] == "codex / genegpt-slim" and len(data["questions"]["id"]) == 450
    assert set(data["questions"]["status"]) == {"right", "wrong"}
    # Loaded at once, each question's text comes from the page (one copy for every run).
    dom, console = chromium.dump_dom(paper_run / "results/report/index.html", tmp_path / "p")
    assert "</b>What is the official gene symbol of LMP10?" in dom, console[-2000:]
    assert '<pre id="js-errors" class="err"></pre>' in dom
    # The same report, as a sweep's: nothing loaded until a run is asked for.
    out = paper_run / "results" / "report-large"
    config = json.loads((paper_run / "results" / "report" / "config.json").read_text())
    plan = build_plan(config, mirror)
    monkeypatch.chdir(paper_run)
    monkeypatch.setattr(report, "AUTOLOAD_QUESTIONS", 10)
    report.write_report(plan, config, "0" * 64, out)
    page = out / "index.html"
    dom, console = chromium.dump_dom(page, tmp_path / "profile")
    assert 'data-ready="1"' in dom and "0 of 0 questions shown (choose a run)" in dom, console[
        -2000:
    ]
    # Opened as results/report-large/index.html, and one folder deeper, as a config's
    # report is kept (results/reports/<config>/, which results/report links to).
    deeper = paper_run / "results" / "reports" / "large"
    shutil.copytree(out, deeper)
    for opened in (page, deeper / "index.html"):
        url = opened.as_uri() + "#run=" + quote("codex / genegpt-full")
        dom, console = chromium.dump_dom(url, tmp_path / "profile")
        assert "450 of 450 questions shown" in dom, (opened, console[-2000:])
        assert "geneturing.gene-alias.000" in dom and "codex / genegpt-full" in dom
        assert "codex / genegpt-slim ·" not in dom  # only the run asked for
        assert '<pre id="js-errors" class="err"></pre>' in dom
    shutil.rmtree(deeper)


@pytest.mark.workflow
@PAPER_RUN
def test_rescoring_reruns_no_model(mirror, paper_run, tmp_path):
    config = paper_config()
    config["scoring"] = {"default": ["strict", "genegpt"]}
    done = snakemake(paper_run, config, "--dry-run", mirror=mirror)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = done.stdout + done.stderr
    assert "score_batch" in jobs and "report" in jobs
    assert "run_shard" not in jobs and "recorded_snapshot" not in jobs


@pytest.mark.workflow
@PAPER_RUN
def test_a_run_added_to_a_finished_sweep_redoes_that_run_and_the_join(mirror, paper_run):
    """Each run's summary is its score batch's: adding a run runs it, reruns its
    model's score batch (which scores it alone: the others' fingerprints are
    unchanged), exports that batch's runs, and joins; no other batch runs again."""
    config = paper_config()
    config["methods"]["genegpt-slim-again"] = {"kind": "genegpt", "mask": "001001"}
    config["runs"].append({"model": "codex", "method": "genegpt-slim-again"})
    done = snakemake(paper_run, config, "--dry-run", mirror=mirror)
    assert done.returncode == 0, done.stderr[-3000:]
    stats = (done.stdout + done.stderr).split("Job stats:")[1]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", stats, re.M))
    assert "summarize_run" not in jobs, jobs  # (one job scores and summarizes a run)
    codex = [r for r in build_plan(config, mirror).runs if r.model == "codex"]  # (one batch)
    assert jobs["score_batch"] == "1" and jobs["export_run"] == str(len(codex)), jobs
    assert jobs["report"] == "1" and "genegpt-slim-again" in done.stdout


@pytest.mark.workflow
@PAPER_RUN
def test_compare_any_two_runs_from_the_command_line(mirror, paper_run):
    config_file = paper_run / "paper.yaml"
    config_file.write_text(yaml.safe_dump(paper_config()))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helixbench",
            "compare",
            "--config",
            str(config_file),
            "--a",
            "codex / genegpt-slim",
            "--b",
            "codex / genegpt-full",
        ],
        cwd=paper_run,
        capture_output=True,
        text=True,
        env={**os.environ, "HELIXBENCH_MIRROR": str(mirror)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = _compared(done.stdout)
    # The benchmark's own task order, on the leaderboard's metric, then the headline.
    assert list(rows)[:3] == ["Gene alias", "Gene name conversion", "Gene SNP association"]
    assert {r["metric"] for r in rows.values()} == {"extracted"}
    assert rows["Gene name conversion"]["p"] == "1.0000"  # identical answers: p = 1
    with open(paper_run / "results" / "report" / "headline.csv") as fh:
        (said,) = [
            r for r in csv.DictReader(fh)
            if (r["benchmark"], r["run_a"], r["run_b"])
            == ("geneturing", "codex / genegpt-slim", "codex / genegpt-full")
        ]  # fmt: skip
    macro = rows["macro (9 tasks)"]
    low, high = (float(x) for x in macro["95% interval"].strip("[]").split(", "))
    assert float(macro["a-b"]) == pytest.approx(float(said["difference"]), abs=5e-5)
    assert (low, high) == pytest.approx((float(said["ci_low"]), float(said["ci_high"])), abs=5e-5)
    assert float(macro["p"]) == pytest.approx(float(said["p_value"]), abs=5e-5)
    assert (low > 0) == (float(said["p_value"]) <= 0.05)  # the interval and the test agree


def _compared(stdout: str) -> dict[str, dict]:
    """``helixbench compare``'s rows by task (its header names the columns)."""
    lines = [line.split("\t") for line in stdout.splitlines() if "\t" in line]
    return {row[1]: dict(zip(lines[0], row, strict=True)) for row in lines[1:]}


@pytest.mark.workflow
@PAPER_RUN
def test_html_report_opens_in_headless_chromium(paper_run):
    report = paper_run / "results" / "report"
    page = report / "index.html"
    html = page.read_text()
    # Nothing to fetch: no external script, style, image or link target to load.
    assert not re.search(
        r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?https?:|@import""", html
    )
    dom, console = chromium.dump_dom(page, paper_run / "chromium-profile")
    assert 'data-ready="1"' in dom, console[-2000:]
    assert '<pre id="js-errors" class="err"></pre>' in dom, dom[:2000]
    assert "Uncaught" not in console, console[-2000:]
    assert 'id="leaderboard-table"' in dom and "codex / genegpt-slim" in dom
    assert "model call 0" in dom and "prompt increment" in dom and "tool call 0" in dom
    # The leaderboard filtered by an axis and sorted by a column, from the address (the
    # view a reader shares): only that benchmark's rows shown, lowest strict score first
    # (the page ranks them best first).
    board = read_csv(report / "leaderboard.csv")
    url = page.resolve().as_uri() + "#leaderboard:benchmark=geneturing&sort=strict&order=asc"
    dom, console = chromium.dump_dom(url, paper_run / "chromium-profile")
    table = dom.split('id="leaderboard-table"')[1].split("</table>")[0]
    rows = re.findall(r"<tr ([^>]*data-run[^>]*)>(.*?)</tr>", table, re.S)
    shown = [(re.search(r'data-run="([^"]*)"', a)[1], re.findall(r"<td>(.*?)</td>", cells, re.S))
             for a, cells in rows if "hidden" not in a]  # fmt: skip
    assert sorted(run for run, _ in shown) == sorted(
        r["run"] for r in board if r["benchmark"] == "geneturing"
    ), console[-2000:]
    strict = [float(cells[6]) for _, cells in shown]
    ranked = [float(r["strict"]) for r in board if r["benchmark"] == "geneturing"]
    assert strict == sorted(strict) and ranked != sorted(ranked), (strict, ranked)
    assert f"{len(shown)} of {len(board)} rows" in dom and len(shown) < len(board)
    assert '<pre id="js-errors" class="err"></pre>' in dom and "Uncaught" not in console
    shot = paper_run / "screenshot.png"  # (beside the report: not one of its files)
    chromium.screenshot(page, shot, paper_run / "chromium-profile")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    # The copy for Snakemake's report, alone in a folder (as Snakemake embeds it): every
    # run inside it, so the transcripts show without runs/.
    alone = paper_run / "bundled-alone"
    alone.mkdir(exist_ok=True)
    shutil.copy(report / "index-bundled.html", alone / "index.html")
    dom, console = chromium.dump_dom(alone / "index.html", paper_run / "chromium-profile")
    assert 'data-ready="1"' in dom and "Uncaught" not in console, console[-2000:]
    assert '<pre id="js-errors" class="err"></pre>' in dom, dom[:2000]
    assert "model call 0" in dom and "prompt increment" in dom and "tool call 0" in dom


@pytest.mark.slow
@pytest.mark.workflow
def test_gene_sets_through_the_workflow(mirror, tmp_path):
    """geneagent through an OpenAI-compatible server (loopback, scripted) with live
    tools (loopback g:Profiler, Enrichr, PubTator), and gsea-top1 on the 56 MSigDB
    sets: the report's gene-set section, figure and per-set claims, and the report
    as a valid RO-Crate."""
    import shutil

    from .support.crate import validate_crate

    script = [
        "ERBB2 and KRAS relay growth-factor signals.\nProcess: MAPK signaling",
        '["ERBB2, KRAS and HRAS take part in MAPK signaling"]',
        "Report: supported by KEGG and Reactome.",
        "Process: MAPK signaling",
        "[]",
        "Process: MAPK signaling",
    ]
    with GeneSetServer() as tools, OpenAIServer() as llm:
        llm.state.script.extend(script)
        config = {
            "benchmarks": ["genesets"],
            "shards": 1,
            "tools": {"mode": "live", "routes": tools.routes()},
            "models": {
                "llm": llm.chat_model(),
                "gprofiler": {"backend": "enrichment"},
            },  # fmt: skip
            # helixbench's wording (evidence first); GeneAgent's own: test_originals.py
            "methods": {"geneagent": {"kind": "geneagent", "prompts": "helixbench"}},
            # The datasets' 1,105 names (the GO background: test_geneagent_paper.py).
            "scoring": {"percentile": {"background": "datasets"}},
            "runs": [
                {"model": "llm", "method": "geneagent", "tasks": ["NeST toy"], "sample": 1},
                {"model": "gprofiler", "method": "gsea-top1", "tasks": ["MSigDB"]},
            ],
        }
        done = snakemake(tmp_path, config, mirror=mirror)
        assert done.returncode == 0, done.stderr[-3000:]
        assert tools.state.of("gprofiler") and tools.state.of("pubtator")
    report = tmp_path / "results" / "report"
    # The report is a valid RO-Crate (the RO-Crate community's validator, offline):
    # with one file it lists taken away, that file is the one issue found. (One
    # validation shows both that the check can fail and that nothing else fails.)
    broken = tmp_path / "broken"
    shutil.copytree(report, broken)
    (broken / "scores.csv.gz").unlink()
    passed, issues = validate_crate(broken, tmp_path / "validator")
    assert not passed and issues and all("'scores.csv.gz'" in issue for issue in issues), issues
    rows = {r["run"]: r for r in read_csv(report / "genesets.csv")}
    agent = rows["llm / geneagent"]
    assert (agent["sets"], agent["claims"], agent["supported"]) == ("1", "1", "1")
    assert agent["tool_calls"] == "3" and agent["tool_errors"] == "0"  # the evidence round
    gsea = rows["gprofiler / gsea-top1"]
    assert gsea["sets"] == "56" and gsea["parse_errors"] == "0"
    assert 0.2 < float(gsea["rougeL"]) < 0.35 and 0.7 < float(gsea["percentile"]) < 0.95
    assert (report / "percentile.png").read_bytes()[:4] == b"\x89PNG"
    assert 'id="genesets"' in (report / "index.html").read_text()
    from helixbench.report.run_share.details import read_details

    (details,) = (tmp_path / "results" / "summaries" / "llm" / "geneagent").glob("*/details.js")
    claims = json.dumps(read_details(details))  # its questions
    assert "ERBB2, KRAS and HRAS take part in MAPK signaling" in claims
    assert "## Gene sets (GeneAgent)" in (report / "report.md").read_text()


@pytest.mark.slow
@pytest.mark.workflow
def test_offline_tools_from_the_seeded_cache_and_a_live_snapshot(mirror, tmp_path, monkeypatch):
    """Codex's slim run with tool calls answered by the seeded cache instead of its own
    recording: every prompt still matches. Then a live snapshot through a loopback
    NCBI, with an API key that must end up nowhere on disk."""
    secret = "SECRETKEY-workflow-0123456789"
    monkeypatch.setenv("NCBI_API_KEY", secret)
    with NCBIServer() as server:
        config = {
            "benchmarks": ["geneturing"],
            "shards": 2,
            "models": DEFAULT_CONFIG["models"],
            "tools": {
                "mode": "offline",
                "seed": [{"recording": "genegpt-2023", "masks": ["001001", "111111"]}],
                "routes": server.routes(),
                "rates": {"blast.ncbi.nlm.nih.gov": 20},
                "blast": {"poll_interval_s": 0.2},
            },
            "snapshots": {"loopback": {}},
            "runs": [{"model": "codex", "method": "genegpt-slim", "tools": "offline"}],
        }
        done = snakemake(tmp_path, config, mirror=mirror)
        assert done.returncode == 0, done.stderr[-3000:]
        assert server.state.received == []  # offline: nothing left the machine
        live = snakemake(
            tmp_path, config, paths.LIVE_SNAPSHOT.format(name="loopback"), mirror=mirror
        )
        assert live.returncode == 0, live.stderr[-3000:]
        assert len(server.state.received) >= 7
        assert server.state.received[0].query["api_key"] == secret
    report = tmp_path / "results" / "report"
    with open(report / "replay.csv") as fh:
        replay = list(csv.DictReader(fh))
    assert sum(int(r["hits"]) for r in replay) == 1354 and all(r["misses"] == "0" for r in replay)
    errors = read_csv(report / "errors.csv.gz")
    assert {r["tools"] for r in errors} == {"offline"}
    assert sum(int(r["tool_hit"]) for r in errors) == 903  # every call Codex made, but one
    assert sum(int(r["tool_offline"]) for r in errors) == 1  # after the length refusal
    macro = [
        r
        for r in read_csv(report / "scores.csv.gz")
        if r["task"] == "macro" and r["metric"] == "genegpt"
    ]
    assert macro[0]["score"] == "0.829037"
    (marker,) = (tmp_path / Path(paths.TOOL_CACHE_SEED).parent.parent).glob("genegpt-2023/*.json")
    seed = json.loads(marker.read_text())
    assert len(seed["files"]) == 18
    snapshot = Snapshot.load(tmp_path / paths.LIVE_SNAPSHOT.format(name="loopback"))
    assert snapshot.source["kind"] == "live" and len(snapshot.replies) == 7
    for path in (tmp_path / "resources").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    for path in [*(tmp_path / "results").rglob("*"), *(tmp_path / "logs").rglob("*")]:
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    "change, message",
    [
        ({"modles": {}}, "modles: unknown key; did you mean 'models'?"),
        ({"shards": 0}, "shards: 0 is out of range; it must be at least 1"),
        (
            {"methods": {"mine": {"kind": "genegpt", "mask": "0010"}}},
            "methods.mine.mask: '0010' must match",
        ),
        (
            {"runs": [{"model": "gpt", "method": "genegpt-slim"}]},
            "runs[0].model: unknown model 'gpt'",
        ),
        ({"runs": [{"model": "codex", "method": "slim"}]}, "runs[0].method: unknown method 'slim'"),
        (
            {"runs": [{"model": "codex", "method": "genegpt-slim", "tasks": ["Gene alais"]}]},
            "runs[0].tasks: unknown task 'Gene alais'; did you mean 'Gene alias'? known: Gene",
        ),
        (
            {"prices": {"gpt-4o": {"prompt": 2.5, "completion": 10}}},
            "prices.gpt-4o: unknown model 'gpt-4o'",
        ),
    ],
)
def test_bad_config_names_the_key(mirror, tmp_path, change, message):
    config = {**DEFAULT_CONFIG, **change}
    result = snakemake(tmp_path, config, "--dry-run", mirror=mirror)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr
    assert len((result.stdout + result.stderr).splitlines()) < 12  # not the whole schema


def test_braces_in_config_strings_reach_the_jobs_as_written(mirror, tmp_path):
    """An inline imported source's ``{task}`` (and braces anywhere in the config) are
    passed to the jobs as they are, never read as Snakemake wildcards."""
    source = {
        "name": "mine {weird}",
        "repo": "ielab/OpenBioLLM",
        "commit": "d2d26e0e8308ff1fa0afc96a1dfff5e2af1190de",
        "format": "genegpt",
        "files": {"geneturing": "openbiollm/results/pre_qwen32b/geneturing/{task}.json"},
        "model": "Qwen {x}",
    }
    config = {
        "benchmarks": ["geneturing"],
        "shards": 1,
        "models": {"q": {"backend": "imported", "source": source}},
        "runs": [{"model": "q", "method": "imported", "tasks": ["gene-alias"]}],
    }
    done = snakemake(tmp_path, config, mirror=mirror)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "results" / "report" / "report.md").read_text()
    assert "Qwen \\{x\\}" not in text and "Qwen {x}" in text and "mine {weird}" in text


def test_missing_mirror_is_an_error(tmp_path):
    result = snakemake(tmp_path, DEFAULT_CONFIG, "--dry-run", mirror=tmp_path / "no-such-dir")
    assert result.returncode != 0
    assert "is not a directory" in result.stdout + result.stderr


def test_a_config_with_nothing_to_run_fails(mirror, tmp_path):
    config = {**DEFAULT_CONFIG, "runs": [{"model": "codex", "method": "genegpt-000001"}]}
    result = snakemake(tmp_path, config, "--dry-run", mirror=mirror)
    assert result.returncode != 0
    assert "nothing to run" in result.stdout + result.stderr


def test_plan_skips_unrecorded_and_unmirrored_runs(mirror):
    config = {
        "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
        "benchmarks": ["geneturing", "genehop"],
        "runs": [
            {"model": "codex", "method": "genegpt-101110"},
            {"model": "codex", "method": "genegpt-111011"},
        ],
    }
    plan = build_plan(config, mirror)
    assert [(t.method, t.task) for t in plan.tasks] == [
        ("genegpt-101110", "SNP gene function"),
        ("genegpt-101110", "Disease gene location"),
    ]
    levels = [(n["method"], n["benchmark"], n["level"]) for n in plan.notes]
    assert ("genegpt-101110", "geneturing", "note") in levels
    assert ("genegpt-111011", "genehop", "warning") in levels  # BLAST GeneHop run: not mirrored
    assert ("genegpt-111011", "geneturing", "warning") in levels
    without_mirror = build_plan(config, None)  # a real user downloads: every recorded task runs
    assert len(without_mirror.tasks) == 2 + 9 + 1
    with pytest.raises(ConfigError, match="listed twice"):
        build_plan({**config, "runs": config["runs"][:1] * 2}, mirror)


@pytest.mark.parametrize(
    "example", sorted(p.name for p in (REPO_ROOT / "config" / "examples").glob("*.yaml"))
)
def test_example_configs_are_valid(example):
    import jsonschema

    schema = yaml.safe_load((REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    config = yaml.safe_load((REPO_ROOT / "config" / "examples" / example).read_text())
    jsonschema.validate(config, schema)
    plan = build_plan(config, None)
    assert plan.tasks


def test_sweeps_expand_to_every_combination(mirror):
    config = {
        "models": {
            "a": {"backend": "openai", "model": "m", "base_url": "http://localhost:8000/v1"},
            "b": {"backend": "openai", "model": "n", "base_url": "http://localhost:8000/v1"},
        },
        "benchmarks": ["geneturing"],
        "runs": [{"models": ["a", "b"], "methods": ["genegpt-slim", "genegpt-000000"]}],
    }
    plan = build_plan(config, mirror)
    runs = {(t.model, t.method) for t in plan.tasks}
    assert runs == {(m, x) for m in "ab" for x in ("genegpt-slim", "genegpt-000000")}
    assert len(plan.tasks) == 4 * 9
    assert plan.endpoints() == {"endpoint_localhost_8000": 4}
    with pytest.raises(ConfigError, match="listed twice"):
        build_plan({**config, "runs": config["runs"] * 2}, mirror)


@pytest.mark.workflow
@PAPER_RUN
def test_progress_lines_in_each_shards_log_and_status_of_the_finished_run(mirror, paper_run):
    (log,) = (paper_run / "logs" / "run" / "codex" / "genegpt-slim").glob("*/shard-0-of-2.log")
    log = log.read_text()
    assert "\r" not in log
    last = [line for line in log.splitlines() if "questions (" in line][-1]
    assert re.match(
        r"codex / genegpt-slim shard-0-of-2: (\d+)/\1 questions \(100%\), model calls \d+, "
        r"tool calls \d+, errors \d+ \| elapsed \d\d:\d\d, ETA 00:00, ",
        last,
    ), last
    done = subprocess.run(
        [sys.executable, "-m", "helixbench", "status", "--json"],
        cwd=paper_run,
        capture_output=True,
        text=True,
        check=True,
    )
    shards = json.loads(done.stdout)
    plan_shards = sum(run.shards for run in build_plan(paper_config(), mirror).runs)
    assert len(shards) == plan_shards and {s["state"] for s in shards} == {"done"}
    slim = [s for s in shards if s["run"] == "codex / genegpt-slim"]
    assert sum(s["done"] for s in slim) == 450
    assert sum(s["model_calls"] for s in slim) > 450


@pytest.mark.workflow
@PAPER_RUN
def test_per_question_scores_load_in_one_call_and_compare_reads_either(mirror, paper_run, tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq

    from helixbench.report.question_scores import COLUMNS, read_question_scores

    report = paper_run / "results" / "report"
    parquet, table = report / "question_scores.parquet", report / "question_scores.csv"
    schema = pq.read_schema(parquet)
    assert schema.names == list(COLUMNS)
    assert schema.field("primary").metadata[b"description"].startswith(b"whether metric")
    assert str(schema.field("score").type) == "double"
    assert str(schema.field("primary").type) == "bool"
    produced = json.loads(schema.metadata[b"helixbench"])
    frame = pd.read_parquet(parquet)
    pd.testing.assert_frame_equal(read_question_scores([parquet]), read_question_scores([table]))
    plan = build_plan(paper_config(), mirror)
    lines = sum(len(read_jsonl(paper_run / r.score_path)) for r in plan.runs)
    assert len(frame) == lines
    primary = frame[frame.primary]
    assert primary.groupby(["run", "task"]).metric.nunique().max() == 1
    assert set(primary[primary.task == "Gene alias"].metric) == {"genegpt"}
    prov = json.loads((report / "provenance.json").read_text())
    assert set(frame.config_sha256) == {prov["config_sha256"]} and produced == prov["helixbench"]
    # A sweep over working directories: their tables in one call.
    other = tmp_path / "sweep-b" / "question_scores.parquet"
    other.parent.mkdir()
    frame.assign(model="codex-b", run=frame.run.str.replace("codex", "codex-b")).to_parquet(other)
    sweep = pd.read_parquet([parquet, other])
    assert len(sweep) == 2 * len(frame) and {"codex", "codex-b"} == set(sweep.model)

    def compare(*source):
        args = [sys.executable, "-m", "helixbench", "compare", *source]
        args += ["--a", "codex / genegpt-slim", "--b", "codex-b / genegpt-full"]
        return subprocess.run(args, cwd=paper_run, capture_output=True, text=True)

    from_files = compare("--scores", str(parquet), str(other))
    assert from_files.returncode == 0, from_files.stderr[-2000:]
    config_file = tmp_path / "paper.yaml"
    config_file.write_text(yaml.safe_dump(paper_config()))
    same_run = compare("--config", str(config_file)).stdout  # codex-b is no run of it
    assert "no run 'codex-b / genegpt-full'" in compare("--config", str(config_file)).stderr
    assert same_run == ""
    rows = _compared(from_files.stdout)
    assert rows["Protein-coding genes"]["a-b"] == "+0.2400"  # as from the config
    assert rows["Protein-coding genes"]["p"] == "0.0007"
    twice = compare("--scores", str(parquet), str(table))
    assert twice.returncode == 1 and "has scores in more than one table" in twice.stderr


@pytest.mark.workflow
@PAPER_RUN
def test_report_score_and_run_jobs_work_in_their_conda_environments(mirror, paper_run, tmp_path):
    """The report, score and run (replay) commands with only their environment's
    packages importable (workflow/envs/; tests/envs.py): the same outputs."""
    from helixbench.transcripts import read_records, without_timings

    from .envs import helixbench_in_env

    report = paper_run / "results" / "report"
    config = json.loads((report / "config.json").read_text())
    out = tmp_path / "report"
    args = ["report", "--config-json", json.dumps(config), "--out-dir", str(out)]
    done = helixbench_in_env("report", args, cwd=paper_run)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("scores.csv.gz", "leaderboard.csv", "question_scores.csv"):
        assert (out / name).read_bytes() == (report / name).read_bytes(), name
    assert (out / "question_scores.parquet").read_bytes() == (
        report / "question_scores.parquet"
    ).read_bytes()
    run = build_plan(config, mirror).find("codex", "genegpt-slim")
    scoring = json.dumps(build_plan(config, mirror).scoring)
    args = ["score", "--spec", json.dumps(run.spec()), "--questions", paths.QUESTIONS]
    args += ["--scoring", scoring, "--out", str(tmp_path / "scores.jsonl")]
    summary = tmp_path / "summary" / "summary.json"
    args += ["--summary", str(summary), "--details", str(summary.parent / "details.js")]
    done = helixbench_in_env("score", [*args, *run.shard_paths()], cwd=paper_run)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "scores.jsonl").read_text() == read_text(paper_run / run.score_path)
    for name in ("summary.json", "prompts.json", "scores.parquet", "details.js"):
        theirs = (paper_run / run.summary_path).parent / name
        assert (summary.parent / name).read_bytes() == theirs.read_bytes(), name
    args = ["run", "--spec", json.dumps(run.spec()), "--shard", "0", "--questions"]
    args += [paths.QUESTIONS, "--out", str(tmp_path / "shard.jsonl")]
    done = helixbench_in_env("run", args, cwd=paper_run)
    assert done.returncode == 0, done.stderr[-3000:]
    ours = [without_timings(r) for r in read_records(tmp_path / "shard.jsonl")]
    theirs = [without_timings(r) for r in read_records(paper_run / run.shard_paths()[0])]
    assert ours == theirs


@pytest.mark.workflow
@PAPER_RUN
def test_the_reports_ro_crate_states_what_produced_it(mirror, paper_run):
    """What the crate says (the validator's check: test_gene_sets_through_the_workflow,
    on a smaller crate: validating this one takes half a minute)."""
    from helixbench.digests import sha256_file

    report = paper_run / "results" / "report"
    crate = json.loads((report / "ro-crate-metadata.json").read_text())
    graph = {e["@id"]: e for e in crate["@graph"]}
    prov = json.loads((report / "provenance.json").read_text())
    parts = [p["@id"] for p in graph["./"]["hasPart"]]
    local = [p for p in parts if not p.startswith("https://")]
    # Every file under results/report/: the report's own, its runs' pages and exports.
    every = {p.relative_to(report).as_posix() for p in report.rglob("*") if p.is_file()}
    assert set(local) == every - {"ro-crate-metadata.json"}
    assert any(name.startswith("exports/") for name in local)
    assert not any(".snakemake_timestamp" in name for name in every)
    for name in local:
        assert graph[name]["sha256"] == sha256_file(report / name), name
        assert graph[name]["description"] and graph[name]["encodingFormat"], name
        assert int(graph[name]["contentSize"]) == (report / name).stat().st_size, name
    for upstream in prov["upstream"]:
        assert graph[upstream["url"]]["sha256"] == upstream["sha256"] == upstream["pinned"]
    plan = build_plan(paper_config(), mirror)
    actions = [e for e in graph.values() if e["@type"] == "CreateAction"]
    names = ["report", *(f"run {r.label}" for r in plan.runs)]
    assert sorted(a["name"] for a in actions) == sorted(names)
    publisher = graph[graph["./"]["publisher"]["@id"]]
    assert (publisher["@type"], publisher["name"]) == ("Person", "A. Researcher")
    tool = graph["#helixbench"]
    assert tool["version"] == prov["helixbench"]["version"]
    assert tool["identifier"] == (prov["helixbench"]["commit"] or "unknown")
    software = [graph[r["@id"]] for r in tool["softwareRequirements"]]
    packages = {k: v for k, v in prov["packages"].items() if v}
    assert {s["name"]: s["version"] for s in software} == {"Python": prov["python"], **packages}
    identities = []
    for part in graph["#model-codex"]["hasPart"]:
        properties = [graph[p["@id"]] for p in graph[part["@id"]]["additionalProperty"]]
        identities.append({p["name"]: p["value"] for p in properties})
    assert identities == [
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in i.items() if v is not None}
        for i in prov["models"]["codex"]
    ]
    slim = graph["#run-codex-genegpt-slim"]
    assert {o["@id"] for o in slim["object"]} >= {"config.json"} and len(slim["object"]) > 1


def _python_312() -> str:
    """An interpreter for Every Eval Ever (it needs Python >= 3.12): on PATH, or one of
    pyenv's."""
    import glob

    found = [shutil.which(f"python3.{minor}") for minor in (12, 13, 14)]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    for python in filter(None, found):
        done = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                              capture_output=True, text=True)  # fmt: skip
        if done.stdout.strip() == "True":
            return python
    pytest.fail("Every Eval Ever's validator needs Python >= 3.12; none found")


@pytest.fixture(scope="session")
def eee_command(tmp_path_factory) -> str:
    """Every Eval Ever's own command (its validator and its Inspect converter), from
    the package registry, in its own venv beside the Inspect our environment pins."""
    from helixbench.environments import install_packages, pip_pins

    inspect = [p for p in pip_pins(REPO_ROOT / "workflow/envs/peers/inspect.yaml")
               if p.startswith("inspect-ai==")]  # fmt: skip
    venv = tmp_path_factory.mktemp("eee") / "venv"
    subprocess.run([_python_312(), "-m", "venv", "--without-pip", str(venv)], check=True)
    install_packages(
        str(venv / "bin" / "python"), ["every-eval-ever==0.3.0", *inspect], byte_compile=False
    )
    return str(venv / "bin" / "every_eval_ever")


@pytest.mark.workflow
@PAPER_RUN
def test_every_eval_ever_export_passes_its_own_validator(paper_run, eee_command):
    """report.exports: [every-eval-ever] in the workflow: each run's aggregate and
    instance files, checked by EEE's validator (schema and semantic rules)."""
    exports = paper_run / "results" / "report" / "exports"
    files = sorted(exports.glob("*/*/every-eval-ever/data/*/*/*/*.json*"))
    assert len(files) == 2 * 3, files  # the three runs with records (000001 has none)
    # Each run under its own benchmark, by its model's developer and id.
    assert {f.relative_to(exports).parts[4:7] for f in files} == {
        ("geneturing", "openai", "code-davinci-002"),
        ("genehop", "openai", "code-davinci-002"),
    }
    # Valid from the repository root (the files' full paths) and from an export folder.
    for cwd, names in (
        (paper_run, [str(f.resolve()) for f in files]),
        (files[0].parents[4], [f.relative_to(files[0].parents[4]).as_posix()
                               for f in files if f.parents[4] == files[0].parents[4]]),
    ):  # fmt: skip
        done = subprocess.run(
            [eee_command, "validate", *names, "--format", "json"],
            capture_output=True,
            text=True,
            cwd=cwd,
        )
        reports = json.loads(done.stdout)
        assert done.returncode == 0 and all(r["valid"] and not r["errors"] for r in reports), (
            reports
        )
    slim = next(f for f in files if "genegpt-slim" in str(f) and f.suffix == ".json")
    aggregate = json.loads(slim.read_text())
    scores = read_csv(paper_run / "results" / "report" / "scores.csv.gz")
    macro = next(
        r for r in scores
        if (r["method"], r["task"], r["metric"]) == ("genegpt-slim", "macro", "extracted")
    )  # fmt: skip
    result = next(
        r for r in aggregate["evaluation_results"]
        if r["evaluation_result_id"] == "geneturing/macro/extracted"
    )  # fmt: skip
    assert result["score_details"]["score"] == float(macro["score"])
    interval = result["score_details"]["uncertainty"]["confidence_interval"]
    assert (interval["lower"], interval["upper"]) == (
        float(macro["ci_low"]),
        float(macro["ci_high"]),
    )
    lines = slim.with_name(slim.stem + "_samples.jsonl").read_text().splitlines()
    assert len(lines) == aggregate["detailed_evaluation_results"]["total_rows"]
    rows = [json.loads(line) for line in lines]
    first = rows[0]
    assert first["interaction_type"] == "agentic" and first["evaluation"]["tool_calls_count"] > 0
    assert aggregate["model_info"]["id"] == "openai/code-davinci-002"
    # An instance row per question for every metric the aggregate reports per task.
    for metric in ("extracted", "genegpt", "strict"):
        of_metric = [r for r in rows if r["evaluation_result_id"].endswith(f"/{metric}")]
        assert len(of_metric) == 450, metric
        alias = [r["evaluation"]["score"] for r in of_metric
                 if r["evaluation_name"] == "geneturing/Gene alias"]  # fmt: skip
        task = next(r for r in scores if (r["method"], r["task"], r["metric"])
                    == ("genegpt-slim", "Gene alias", metric))  # fmt: skip
        assert sum(alias) / len(alias) == pytest.approx(float(task["score"]))


@pytest.mark.workflow
@PAPER_RUN
def test_inspect_export_is_read_back_by_inspect_and_served_by_inspect_view(
    mirror, paper_run, tmp_path, inspect_env, eee_command
):
    """A run as an Inspect eval log, written by Inspect's own writer in Inspect's own
    environment (built as the workflow builds it), read back by read_eval_log (its
    samples' events, the run's ids and times, each metric's mean and the leaderboard's
    macro), listed and served by `inspect view`, and converted by Every Eval Ever's
    own Inspect converter into records its validator passes."""
    import socket

    import requests

    env = Path(inspect_env)
    python = json.loads(env.read_text())["python"]
    config = json.loads((paper_run / "results" / "report" / "config.json").read_text())
    plan = build_plan(config, mirror)
    run = plan.find("codex", "genegpt-101110")
    out = tmp_path / "exports"
    args = [sys.executable, "-m", "helixbench", "export", "--spec", json.dumps(run.spec())]
    args += ["--questions", paths.QUESTIONS, "--scoring", json.dumps(plan.scoring)]
    args += ["--scores", run.score_path, "--summary", run.summary_path, "--formats", "inspect"]
    args += ["--inspect-env", str(env), "--out", str(out), *run.shard_paths()]
    done = subprocess.run(args, cwd=paper_run, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = (out / "inspect").glob("*.eval")
    check = (
        "import sys, json\nfrom inspect_ai.log import read_eval_log\n"
        "log = read_eval_log(sys.argv[1])\ns = log.samples[0]\n"
        "print(json.dumps({'status': log.status, 'samples': len(log.samples),"
        " 'means': {e.name: e.metrics['mean'].value for e in log.results.scores},"
        " 'macros': {e.name: e.metrics['macro'].value for e in log.results.scores},"
        " 'roles': [m.role for m in s.messages],"
        " 'calls': sum(len(m.tool_calls or []) for m in s.messages if m.role == 'assistant'),"
        " 'events': [e.event for e in s.events], 'model': log.eval.model,"
        " 'ids': [log.eval.run_id, log.eval.task_id],"
        " 'times': [log.stats.started_at, log.stats.completed_at],"
        " 'replies': [m.content for m in s.messages if m.role == 'tool'],"
        " 'empty': sum(not x.events for x in log.samples),"
        " 'uncounted': sum(not x.model_usage for x in log.samples),"
        " 'tokens': log.stats.model_usage[log.eval.model].input_tokens,"
        " 'scores': sorted(s.scores)}))"
    )
    done = subprocess.run([python, "-c", check, str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    back = json.loads(done.stdout)
    assert back["status"] == "success" and back["samples"] == 100  # GeneHop's 2 tasks
    assert back["roles"][:3] == ["user", "assistant", "tool"] and back["calls"] >= 1
    assert back["scores"] == ["extracted", "genegpt", "strict"]
    scores = read_csv(paper_run / "results" / "report" / "scores.csv.gz")
    tasks = [r for r in scores if r["method"] == "genegpt-101110" and r["metric"] == "extracted"]
    macro = next(float(r["score"]) for r in tasks if r["task"] == "macro")
    assert back["means"]["extracted"] == pytest.approx(macro)  # both tasks have 50 questions
    assert back["macros"]["extracted"] == pytest.approx(macro)
    assert back["model"] == "openai/code-davinci-002" and all(back["ids"])
    assert back["times"][0] < back["times"][1] and back["empty"] == 0
    # Codex's tokens, counted from the recorded texts with p50k_base (models.tokens).
    assert back["uncounted"] == 0 and back["tokens"] > 100 * 1000
    # A sample that asked no model (an enrichment run) used none; one whose calls
    # nothing counted has no figure.
    rule = (
        "import runpy, sys\nusage = runpy.run_path(sys.argv[1])['usage']\n"
        "uncounted = [{'type': 'model', 'input_tokens': None, 'output_tokens': None}]\n"
        "print(usage([{'type': 'tool'}]).total_tokens, usage(uncounted))"
    )
    module = REPO_ROOT / "src" / "helixbench" / "report" / "exports" / "inspect_log.py"
    done = subprocess.run([python, "-c", rule, str(module)], capture_output=True, text=True)
    assert done.stdout.split() == ["0", "None"], done.stderr[-2000:]
    assert back["events"][:2] == ["model", "tool"]
    assert not any(r.startswith(("b'", 'b"')) for r in back["replies"])  # text, not bytes
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\+00-00_codex-genegpt-101110_\w{22}\.eval",
                        log.name)  # fmt: skip
    converted = subprocess.run(
        [eee_command, "convert", "inspect", "--log_path", str(out / "inspect"),
         "--output_dir", "data"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert converted.returncode == 0, converted.stderr[-3000:]
    assert "Converted 1 evaluation log(s)." in converted.stdout
    records = sorted(r.relative_to(tmp_path).as_posix() for r in tmp_path.glob("data/**/*.json*"))
    # The converter names the model as our own export does (not openai/openai/...).
    folder = "data/genehop/openai/code-davinci-002/"
    assert records and all(r.startswith(folder) for r in records), records
    record = json.loads(next(tmp_path.glob("data/**/*-*.json")).read_text())
    assert record["model_info"]["id"] == "openai/code-davinci-002", record["model_info"]
    valid = subprocess.run(
        [eee_command, "validate", *records, "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert valid.returncode == 0 and all(r["valid"] for r in json.loads(valid.stdout)), (
        valid.stdout[-3000:]
    )
    with socket.socket() as probe:  # a free loopback port for inspect view
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inspect = str(Path(python).parent / "inspect")
    view = subprocess.Popen(
        [
            inspect,
            "view",
            "--log-dir",
            str(out / "inspect"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        listing = None
        for _ in range(120):
            try:
                listing = requests.get(f"http://127.0.0.1:{port}/api/log-files", timeout=5)
                break
            except requests.ConnectionError:
                if view.poll() is not None:
                    pytest.fail(view.stderr.read()[-3000:])
                time.sleep(0.5)
        assert listing is not None and listing.status_code == 200, listing
        assert log.name in listing.text
    finally:
        view.terminate()
        view.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.workflow
def test_switching_configs_reruns_nothing_and_each_finds_its_report(mirror, tmp_path):
    """Two configs that give one name to two runs (another task list) and seed other
    masks: each keeps its own run files and report; run again, neither reruns anything
    of the other's, and results/report follows the config run last (a dry run moves it
    not). Without the mirror, offline, nothing is planned and no file changes."""
    first = {
        "benchmarks": ["geneturing"],
        "shards": 1,
        "tools": {"mode": "offline", "seed": [{"recording": "genegpt-2023", "masks": ["001001"]}]},
        "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
        "runs": [{"model": "codex", "method": "genegpt-slim", "tasks": ["Gene alias"]}],
    }
    second = json.loads(json.dumps(first))
    second["runs"][0]["tasks"] = ["Gene alias", "SNP location"]
    second["tools"]["seed"][0]["masks"] = ["001001", "111111"]
    for config in (first, second):
        done = snakemake(tmp_path, config, mirror=mirror)
        assert done.returncode == 0, done.stderr[-3000:]
    link = tmp_path / "results" / "report"
    second_report = link.resolve()
    offline = {k: v for k, v in os.environ.items() if k != "HELIXBENCH_MIRROR"}

    def without_mirror(config, *args):  # (every file is here: no mirror, no network)
        return run_snakemake(tmp_path, config, "--cores", "2", *args, env=offline)

    for config in (first, second):
        again = without_mirror(config, "-n")
        assert "Nothing to be done" in again.stdout + again.stderr, again.stderr[-2000:]
    assert link.resolve() == second_report  # (dry runs move nothing)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "resources").rglob("*") if p.is_file()}
    again = without_mirror(first)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    assert link.is_symlink() and link.resolve() != second_report
    assert (link / "report.md").read_text().count("codex / genegpt-slim") >= 1
    runs = sorted(p.parent.name for p in (tmp_path / "results/runs/codex/genegpt-slim").glob("*/*"))
    assert len(set(runs)) == 2  # one folder per variant of the run
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "resources").rglob("*") if p.is_file()}
    assert after == before
