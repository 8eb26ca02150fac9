"""The report of a large sweep: wall time, peak memory, file sizes and page load.

Run on demand (upstream files from the mirror):

    HELIXBENCH_MIRROR=../shared/mirror python perf/sweep_report.py --runs 50 200 1000

Builds N runs over the whole question bank (GeneTuring, GeneHop, GeneTuring 2025,
BioRAGent: every task of each), as a sweep of models x methods would leave them.
--shape gold-oracle (the default, the shape the sweep-scale issue is accepted on):
every run a clone of a gold oracle's no-tools records (one model call a question,
"Answer: <gold>"), its own shard file, answers only (the score jobs make the scores).
--shape drawn: GeneGPT-shaped transcripts (three model calls and two NCBI calls a
question, replies of a few kilobytes, ~11 KB a record) whose answers are drawn from
the gold and from wrong answers (another question's gold), in --variants sets, each
run hard-linking one.

Then, as Snakemake would on a machine of --cores cores, the score jobs (`score_batch`:
the plan's runs in order, --batch at a time across models, in one process, each run's
scores and its summary, every run scored afresh and no verdict kept from an earlier
call; the batches in
parallel; --per-run: a process a run, as `helixbench score --summary`), and the report
rule (`helixbench report`). Printed per N: the score
jobs' wall time and mean seconds a job, the report's wall time and peak memory (the
rule alone: the join), the report's size (index.html, the per-run question files,
comparisons.csv.gz, question_scores.parquet) against the records' and the index's load
in headless Chromium (the page's own clock at ready, and the whole `chromium
--dump-dom` process). With --snakemake, also the report through Snakemake: the whole
`snakemake` command that ends a sweep, Snakemake's own start and bookkeeping included,
and one `snakemake` from the last answer to the report (every score job, each run
scored afresh, and the report: the figure the sweep-scale issue is accepted on; its
peak is the largest single job's).
With --score-only, the runs are built and scored and the report left for a later
--report-only call (a 10,000-run sweep's score jobs take most of an hour on 2 cores).
With --base DIR (a checkout of an earlier helixbench, e.g. `git worktree add /tmp/base
<rev>`), its report command (and workflow) runs on the same files beside, for N up to
--base-max.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench import paths  # noqa: E402
from helixbench.config import build_plan  # noqa: E402
from helixbench.datasets.fetch import resolve_mirror  # noqa: E402
from helixbench.datasets.jsonfiles import stored_bytes  # noqa: E402
from helixbench.scoring import CORRECTNESS_SCORERS, scorers_for  # noqa: E402
from helixbench.scoring.batch import batch_jobs, batch_size  # noqa: E402
from helixbench.transcripts import read_records  # noqa: E402

BENCHMARKS = ["geneturing", "genehop", "geneturing2025", "bioragent"]
SHAPES = {50: (5, 10), 200: (10, 20), 1000: (20, 50)}  # runs -> (models, methods)


def sweep_config(runs: int) -> dict:
    n_models, n_methods = SHAPES.get(runs) or (max(1, runs // 10), min(runs, 10))
    masks = [f"{i:06b}" for i in range(1, 64)][: n_methods - 1]
    models = {
        f"model-{i}": {
            "backend": "openai",
            "model": f"model-{i}",
            "api": "chat",
            "base_url": "http://127.0.0.1:8000/v1",
            "api_key_env": None,
        }
        for i in range(n_models)
    }
    return {
        "benchmarks": BENCHMARKS,
        "shards": 1,
        "models": models,
        "methods": {"no-tools": {"kind": "no-tools"}},
        "runs": [
            {"models": list(models), "methods": ["no-tools", *(f"genegpt-{m}" for m in masks)]}
        ],
    }


def _reply(rng: random.Random, size: int) -> str:
    """An NCBI-reply-shaped text of about ``size`` characters."""
    ids = ",".join(str(rng.randrange(10**6, 10**8)) for _ in range(size // 10))
    return json.dumps(
        {"header": {"type": "esearch", "version": "0.3"}, "esearchresult": {"idlist": ids}}
    )[:size]


def make_oracle(plan, questions: list[dict], out: Path) -> None:
    """The gold oracle's records (shard.jsonl, answers only, no scores) for every
    question of the plan's first run, as a no-tools run leaves them: one model call a
    question (the question asked, "Answer: <gold>" replied), __MODEL__ / __METHOD__ in
    place of names."""
    tasks = {(t.benchmark, t.task) for t in plan.runs[0].tasks}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "shard.jsonl", "w") as shard:
        for q in questions:
            if (q["benchmark"], q["task"]) not in tasks:
                continue
            gold = q["gold"] if isinstance(q["gold"], str) else ", ".join(q["gold"])
            event = {
                "type": "model",
                "index": 0,
                "data": {
                    "prompt_sha256": hashlib.sha256(q["text"].encode()).hexdigest(),
                    "prompt_chars": 600 + len(q["text"]),
                    "prompt_increment": q["text"],
                    "continues_previous": False,
                    "completion": f"Answer: {gold}",
                    "cache": "miss",
                    "error": None,
                    "prompt_tokens": 150 + len(q["text"]) // 4,
                    "completion_tokens": 5 + len(gold) // 4,
                    "reused_tokens": None,
                    "finish_reason": "stop",
                },
                "latency_s": 0.4,
            }
            record = {
                "model": "__MODEL__",
                "method": "__METHOD__",
                "benchmark": q["benchmark"],
                "task": q["task"],
                "snapshot_id": None,
                "tools_mode": "none",
                "model_identity": {"backend": "openai", "model": "__MODEL__"},
                "question_id": q["id"],
                "header_sha256": None,
                "answer": f"Answer: {gold}",
                "error": None,
                "events": [event],
                "wall_s": 0.4,
                "finished_at": 1796300000.0,
            }
            shard.write(json.dumps(record) + "\n")


def make_variant(plan, questions: list[dict], seed: int, out: Path) -> None:
    """One set of records (shard-0-of-1.jsonl) and scores (scores.jsonl) for every
    question of the plan's first run, with __MODEL__ / __METHOD__ in place of names."""
    rng = random.Random(seed)
    skill = rng.uniform(0.3, 0.8)
    by_task: dict[tuple[str, str], list[dict]] = {}
    for q in questions:
        by_task.setdefault((q["benchmark"], q["task"]), []).append(q)
    tasks = {(t.benchmark, t.task) for t in plan.runs[0].tasks}
    out.mkdir(parents=True, exist_ok=True)
    header = "GeneGPT-style prompt header with four demonstrations. " * 120
    header_sha = hashlib.sha256(header.encode()).hexdigest()
    with open(out / "shard.jsonl", "w") as shard, open(out / "scores.jsonl", "w") as scores:
        first = True
        for (benchmark, task), of_task in by_task.items():
            if (benchmark, task) not in tasks:
                continue
            metrics = scorers_for(task, plan.scoring)
            golds = [
                q["gold"] if isinstance(q["gold"], str) else ", ".join(q["gold"]) for q in of_task
            ]
            for q, gold in zip(of_task, golds, strict=True):
                right = rng.random() < skill
                answer = gold if right else rng.choice(golds)
                url = f"https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term={q['index']}"
                events = []
                for i in range(3):
                    increment = q["text"] if i == 0 else _reply(rng, rng.randrange(2500, 5000))
                    completion = f"Answer: {answer}" if i == 2 else f"[{url}&retstart={i}]"
                    events.append(
                        {
                            "type": "model",
                            "index": i,
                            "data": {
                                "prompt_sha256": "0" * 64,
                                "prompt_chars": 9000 + i * 4000,
                                "prompt_increment": increment,
                                "continues_previous": True,
                                "completion": completion,
                                "cache": "miss",
                                "error": None,
                                "prompt_tokens": 2500 + 1000 * i,
                                "completion_tokens": 30,
                                "reused_tokens": None,
                                "finish_reason": "stop",
                            },
                            "latency_s": 0.8,
                        }
                    )
                    if i < 2:
                        events.append(
                            {
                                "type": "tool",
                                "index": i,
                                "data": {
                                    "url": f"{url}&retstart={i}",
                                    "status": 200,
                                    "bytes": 4000,
                                    "cache": "hit",
                                    "error": None,
                                },
                                "latency_s": 0.001,
                            }
                        )
                record = {
                    "model": "__MODEL__",
                    "method": "__METHOD__",
                    "benchmark": benchmark,
                    "task": task,
                    "snapshot_id": "snap-synthetic",
                    "tools_mode": "offline",
                    "model_identity": {"backend": "openai", "model": "__MODEL__"},
                    "loop": {"max_calls": 10, "url_rule": "first"},
                    "question_id": q["id"],
                    "header_sha256": header_sha,
                    "answer": f"Answer: {answer}",
                    "error": None,
                    "events": events,
                    "wall_s": 2.5,
                    "finished_at": 1796300000.0,
                }
                if first:
                    record["header"], first = header, False
                shard.write(json.dumps(record) + "\n")
                for metric in metrics:
                    score = (
                        float(right) if metric in CORRECTNESS_SCORERS else round(rng.random(), 4)
                    )
                    scores.write(
                        json.dumps(
                            {
                                "question_id": q["id"],
                                "index": q["index"],
                                "model": "__MODEL__",
                                "method": "__METHOD__",
                                "benchmark": benchmark,
                                "task": task,
                                "metric": metric,
                                "score": score,
                                "demo": q.get("demo"),
                                "error": None,
                                "answered_as": None,
                                "scored_by": None,
                            }
                        )
                        + "\n"
                    )


def build_sweep(work: Path, runs: int, variants: int, mirror, shape: str) -> tuple[dict, object]:
    config = sweep_config(runs)
    plan = build_plan(config, mirror)
    questions = [json.loads(line) for line in (work / paths.QUESTIONS).read_text().splitlines()]
    if shape == "gold-oracle":
        return config, clone_oracle(work, plan, questions)
    made = work / "variants"
    for v in range(variants):
        if not (made / str(v) / "scores.jsonl").is_file():
            make_variant(plan, questions, v, made / str(v))
    for i, run in enumerate(plan.runs):
        v = made / str(i * 7 % variants)
        shard = work / run.shard_paths()[0]
        shard.parent.mkdir(parents=True, exist_ok=True)
        kept = v / f"shard{''.join(shard.suffixes)}"
        if not kept.is_file():
            kept.write_bytes(stored_bytes(kept, (v / "shard.jsonl").read_bytes()))
        if not shard.exists():
            os.link(kept, shard)
        score = work / run.score_path
        score.parent.mkdir(parents=True, exist_ok=True)
        text = (v / "scores.jsonl").read_text()
        own = text.replace("__MODEL__", run.model).replace("__METHOD__", run.method)
        score.write_bytes(stored_bytes(score, own.encode()))
    return config, plan


def clone_oracle(work: Path, plan, questions: list[dict]):
    """Every run of the plan a clone of the gold oracle's records: its own shard file
    (its names in place), no scores (the score jobs make them)."""
    made = work / "oracle"
    if not (made / "shard.jsonl").is_file():
        make_oracle(plan, questions, made)
    text = (made / "shard.jsonl").read_text()
    for run in plan.runs:
        shard = work / run.shard_paths()[0]
        shard.parent.mkdir(parents=True, exist_ok=True)
        if not shard.exists():
            own = text.replace("__MODEL__", run.model).replace("__METHOD__", run.method)
            shard.write_bytes(stored_bytes(shard, own.encode()))
    return plan


def timed(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float]:
    """Wall seconds and peak memory (GB) of a command (GNU time)."""
    with tempfile.NamedTemporaryFile("r") as out:
        started = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", out.name, *command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"{' '.join(command[:4])} failed:\n{done.stderr[-3000:]}")
        return wall, int(out.read().split()[-1]) / 1e6


def score_all(work: Path, plan, cores: int, env: dict) -> tuple[float, float]:
    """Every run's score job, which writes the run's summary too (as the workflow's
    ``score_run``), ``cores`` at a time: wall, mean seconds a job."""
    scoring = json.dumps(plan.scoring, sort_keys=True)

    def command(run):
        return [
            sys.executable,
            "-m",
            "helixbench",
            "score",
            "--spec",
            json.dumps(run.spec(), sort_keys=True),
            "--questions",
            paths.QUESTIONS,
            "--scoring",
            scoring,
            "--model-cache",  # (as the workflow: the embedding scorer's vectors kept)
            paths.MODEL_CACHE,
            "--out",
            run.score_path,
            "--summary",
            run.summary_path,
            "--details",
            run.details_path,
            *run.shard_paths(),
        ]

    wall, seconds = _in_parallel([command(run) for run in plan.runs], work, env, cores)
    return wall, sum(seconds) / len(seconds)


def _in_parallel(commands: list[list[str]], work: Path, env: dict, cores: int):
    """Each command run in ``work``, ``cores`` at a time: wall, and each one's seconds."""

    def job(command):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        return time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        seconds = list(pool.map(job, commands))
    return time.perf_counter() - started, seconds


# A score batch as the workflow's score_batch job scores it (workflow/scripts/score_batch.py):
# its runs' jobs made once by the caller, as Snakemake hands them to the job (params.runs).
BATCH_JOB = """
import json, sys
from pathlib import Path
from helixbench.scoring.batch import score_batch
batch = json.loads(Path(sys.argv[1]).read_text())
score_batch(batch["jobs"], batch["scoring"], batch["models"], Path(sys.argv[2]), Path(sys.argv[3]))
"""


def score_batches(work: Path, config: dict, plan, cores: int, env: dict, size: int | str):
    """Every run scored and summarized as the workflow's ``score_batch`` jobs do (one
    process a batch of the plan's runs, ``size`` at a time, given its runs' jobs as the
    rule's parameters give them), ``cores`` batches at a time: wall, and the batches'
    seconds a run."""
    rescore = {**env, "HELIXBENCH_RESCORE": "1"}  # (timed afresh, whatever is on disk)
    # (and no verdict kept by an earlier call: the sweep's own runs share theirs)
    (work / paths.MODEL_CACHE).with_name("verdicts.sqlite").unlink(missing_ok=True)
    models = {name: spec for _, name, spec in plan.scoring_models()} or None
    folder = work / "logs" / "perf-batches"
    folder.mkdir(parents=True, exist_ok=True)
    commands = []
    for i, runs in enumerate(plan.score_batches(batch_size(size, len(plan.runs))).values()):
        batch = {"jobs": batch_jobs(plan, runs), "scoring": plan.scoring, "models": models}
        (folder / f"{i}.json").write_text(json.dumps(batch))
        commands.append(
            [sys.executable, "-c", BATCH_JOB, str(folder / f"{i}.json")]
            + [paths.QUESTIONS, paths.MODEL_CACHE]
        )
    wall, seconds = _in_parallel(commands, work, rescore, cores)
    return wall, sum(seconds) / len(plan.runs)


def page_load(page: Path, run: str | None = None) -> tuple[float | None, float]:
    """The page's own time to ready (ms, where it says) and the dump-dom process (s);
    with ``run``, opened at that run's questions (``#run=``), the page's time from
    asking for the run to its questions shown (ms) in place of the first."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as profile:
        started = time.perf_counter()
        done = subprocess.run(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={profile}",
                # (a run's file comes after the page's load: the DOM once it is shown)
                *(["--virtual-time-budget=60000"] if run else []),
                "--dump-dom",
                # (as a reader opens it: through results/report, the link not resolved)
                page.absolute().as_uri() + (f"#run={quote(run)}" if run else ""),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        wall = time.perf_counter() - started
    found = re.search(rf'data-{"run" if run else "ready"}-ms="(\d+)"', done.stdout)
    return (int(found.group(1)) if found else None), wall


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def question_bank(work: Path, n: int, cores: int, env: dict) -> None:
    """resources/benchmarks/questions.jsonl, as the workflow makes it."""
    if (work / paths.QUESTIONS).is_file():
        return
    config = work / "config.yaml"
    # (a replayed run: the sweep's own models answer at no server, and the workflow
    # checks the servers of the runs it would start)
    replay = {"codex": {"backend": "replay", "recording": "genegpt-2023"}}
    runs = [{"model": "codex", "method": "genegpt-slim", "benchmarks": ["geneturing"]}]
    config.write_text(json.dumps({**sweep_config(n), "models": replay, "runs": runs}))
    snakefile = str(ROOT / "workflow" / "Snakefile")
    command = [sys.executable, "-m", "snakemake", "-s", snakefile, "--directory", str(work)]
    command += ["--configfile", str(config), "--cores", str(cores), paths.QUESTIONS]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])


def records_size(work: Path, plan) -> int:
    """The runs' records as a real sweep would hold them: each run's own shard files
    (the variants' hard links counted once a run)."""
    return sum((work / p).stat().st_size for run in plan.runs for p in run.shard_paths())


def snakemake_report(work: Path, config: dict, cores: int, env: dict, root: Path) -> dict:
    """The sweep's end as a user's ``snakemake`` runs it (``root``'s workflow), after
    the runs' jobs are marked done (their files were made here, not by it): one
    ``snakemake`` from the last answer to the report (every score job, each run scored
    afresh and no verdict kept from before, then the report: the figure the sweep-scale
    issue is accepted on; its peak is the largest single job's), then the report alone
    again (the whole command: start, DAG, the report job, Snakemake's bookkeeping)."""
    sweep = work / "sweep.yaml"
    sweep.write_text(json.dumps(config))
    command = [sys.executable, "-m", "snakemake", "-s", str(root / "workflow" / "Snakefile")]
    command += ["--directory", str(work), "--configfile", str(sweep), "--cores", str(cores)]
    # (the shards first: the runs of a variant share their shard's inode, so touching
    # one run's shard after another's scores would make those look out of date)
    steps = [["--until", "recorded_snapshot"], ["--touch", "--until", "run_shard"]]
    steps += [["--dry-run", "--forcerun", "score_batch", "report"]]
    for step in steps:
        done = subprocess.run([*command, *step], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"snakemake {' '.join(step)} failed:\n{done.stderr[-3000:]}")
    stats = (done.stdout + done.stderr).split("Job stats:")[-1]
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", stats, re.M))
    if set(planned) - {"score_batch", "report", "all", "total"}:
        sys.exit(f"snakemake would run more than the score jobs and the report: {planned}")
    (work / paths.MODEL_CACHE).with_name("verdicts.sqlite").unlink(missing_ok=True)
    rescore = {**env, "HELIXBENCH_RESCORE": "1"}
    wall, peak = timed([*command, "--forcerun", "score_batch", "report"], work, rescore)
    found = {"last answer to report s": round(wall, 1), "its peak GB": round(peak, 2)}
    wall, peak = timed([*command, "--forcerun", "report"], work, env)
    return found | {"snakemake report s": round(wall, 1), "snakemake peak GB": round(peak, 2)}


def report_row(
    code: str, n: int, config: dict, plan, work: Path, out: Path, env: dict, records: int
) -> dict:
    """The report command of ``env``'s code on the sweep: its figures."""
    command = [sys.executable, "-m", "helixbench", "report", "--config-json", json.dumps(config)]
    wall, peak = timed([*command, "--out-dir", str(out)], work, env)
    ready_ms, dump_s = page_load(out / "index.html")
    last = config["runs"][-1]  # (the page's last run)
    model, method = (last.get(k) or last[f"{k}s"][-1] for k in ("model", "method"))
    run_ms, run_dump_s = page_load(out / "index.html", f"{model} / {method}")
    return {
        "code": code,
        "N": n,
        "report s": round(wall, 1),
        "peak GB": round(peak, 2),
        "index.html MB": round(size(out / "index.html") / 1e6, 2),
        "runs/ MB": round(size(out / "runs") / 1e6),  # (an earlier helixbench's copies)
        "report MB (without runs/)": round((size(out) - size(out / "runs")) / 1e6, 1),
        # (the page reads them where the score jobs wrote them: not the report's)
        "question files MB": round(sum(size(work / r.details_path) for r in plan.runs) / 1e6),
        "records MB": round(records / 1e6),
        "report / records %": round(100 * size(out) / records, 1),
        "comparisons rows": sum(1 for _ in gzip.open(out / "comparisons.csv.gz")) - 1,
        "parquet MB": round(size(out / "question_scores.parquet") / 1e6, 1),
        "ready ms": ready_ms,
        "dump-dom s": round(dump_s, 1),
        "a run's questions ms": run_ms,
        "with the index, dump-dom s": round(run_dump_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "sweep-report")
    parser.add_argument(
        "--shape",
        choices=["gold-oracle", "drawn"],
        default="gold-oracle",
        help="gold-oracle: every run the gold oracle's answers (no-tools records, answers "
        "only); drawn: GeneGPT-shaped transcripts with drawn answers and scores",
    )
    parser.add_argument("--variants", type=int, default=25, help="distinct transcript sets (drawn)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--base", type=Path, help="a checkout of an earlier helixbench")
    parser.add_argument("--base-max", type=int, default=50, help="largest N the base runs")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="time the report again on the runs and summaries a previous call left in --work",
    )
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="build and score the runs, no report (a later --report-only times it)",
    )
    parser.add_argument(
        "--snakemake",
        action="store_true",
        help="also the report through Snakemake (the whole command, as a sweep ends), "
        "and one snakemake from the last answer to the report (score jobs and report)",
    )
    parser.add_argument(
        "--batch",
        default="auto",
        help="runs a score job scores, or auto (config: score_batch)",
    )
    parser.add_argument(
        "--per-run", action="store_true", help="score a run a process (helixbench score), as before"
    )
    args = parser.parse_args()
    mirror = resolve_mirror(None)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    rows = []
    for n in args.runs:
        work = args.work / args.shape / f"n{n}"
        work.mkdir(parents=True, exist_ok=True)
        question_bank(work, n, args.cores, env)
        if args.report_only:
            config = sweep_config(n)
            plan = build_plan(config, mirror)
        else:
            started = time.perf_counter()
            config, plan = build_sweep(work, n, args.variants, mirror, args.shape)
            built = time.perf_counter() - started
            if args.per_run:
                summaries_wall, per_job = score_all(work, plan, args.cores, env)
            else:
                summaries_wall, per_job = score_batches(
                    work, config, plan, args.cores, env, args.batch
                )
        records = records_size(work, plan)
        if args.score_only:
            print(
                json.dumps(
                    {
                        "N": n,
                        "built s": round(built),
                        "score wall s": round(summaries_wall),
                        "s/run": round(per_job, 2),
                        "records MB": round(records / 1e6),
                    }
                ),
                flush=True,
            )
            continue
        row = report_row("this", n, config, plan, work, work / paths.REPORT_DIR, env, records)
        row["questions/run"] = len(read_records(work / plan.runs[0].shard_paths()[0]))
        if not args.report_only:
            row |= {"built s": round(built), "score+summary wall s": round(summaries_wall)}
            row["s/run scored+summarized"] = round(per_job, 2)
            batches = f"batches of {batch_size(args.batch, len(plan.runs))}"
            row["score jobs"] = "a process a run" if args.per_run else batches
        if args.snakemake:
            row |= snakemake_report(work, config, args.cores, env, ROOT)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.base and n <= args.base_max:
            base_env = {**os.environ, "PYTHONPATH": str(args.base / "src")}
            out = work / "results" / "report-base"
            rows.append(report_row("base", n, config, plan, work, out, base_env, records))
            if args.snakemake:
                rows[-1] |= snakemake_report(work, config, args.cores, base_env, args.base)
            print(json.dumps(rows[-1]), flush=True)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    print("\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "")) for c in columns) + " |")


if __name__ == "__main__":
    main()
