"""Command line: one subcommand per workflow stage, each a thin call into the package.

The Snakemake rules call these; they also work by hand, e.g.
``helixbench plan --config config/config.yaml`` shows what a config will run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path


def _fetch(args) -> None:
    from .fetch import fetch_local, resolve_mirror

    mirror = resolve_mirror(args.mirror)
    digest = fetch_local(Path(args.output), mirror, Path(args.lock), args.url, args.sha256)
    logging.info("fetched %s (sha256 %s)", args.output, digest)


def _questions(args) -> None:
    from .questions import write_question_table

    count = write_question_table(Path(args.out))
    logging.info("wrote %d questions to %s", count, args.out)


def _snapshot(args) -> None:
    from .methods.genegpt import snapshot_of_recording

    snapshot = snapshot_of_recording(Path(args.recording), args.recording_name, args.url, args.mask)
    snapshot.save(Path(args.out))
    logging.info("snapshot %s from %s", snapshot.id, args.url)


def _live_snapshot(args) -> None:
    from .methods.genegpt import take_live_snapshot

    snapshot = take_live_snapshot(args.name, args.mode)
    snapshot.save(Path(args.out))
    logging.info("snapshot %s (%s) taken %s", snapshot.id, args.name, snapshot.source["taken_at"])


def _seed_cache(args) -> None:
    from .tools.cache import ReplyCache, seed_from_recordings

    seeded = seed_from_recordings(args.recording, ReplyCache(Path(args.cache)), args.files)
    for file in seeded:
        logging.info("%s: %d recorded replies, %d new", file["url"], file["replies"], file["added"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {"recording": args.recording, "cache": args.cache, "files": seeded}
    out.write_text(json.dumps(summary, indent=1) + "\n")


def _run(args) -> None:
    from .runner import run_shard

    run_shard(
        json.loads(args.spec),
        args.shard,
        Path(args.questions),
        Path(args.out),
        model_cache=Path(args.model_cache) if args.model_cache else None,
        model_dir=Path(args.model_dir) if args.model_dir else None,
        threads=args.threads,
    )


def _prepare_model(args) -> None:
    from .models.gguf import convert_gguf

    info = convert_gguf(json.loads(args.spec), Path(args.out))
    logging.info("converted %s to %s", info["identity"], args.out)


def _index(args) -> None:
    from .paths import upstream_path
    from .retrieval import build_index

    facts = build_index(
        json.loads(args.settings), lambda f: Path(upstream_path(f)), Path(args.out).parent
    )
    logging.info("built index %s", json.dumps(facts))


def _score(args) -> None:
    from .runner import score_run

    score_run(
        json.loads(args.spec),
        Path(args.questions),
        [Path(p) for p in args.shards],
        Path(args.out),
        json.loads(args.scoring),
        scorer_models=json.loads(args.scorer_models) if args.scorer_models else None,
        model_cache=Path(args.model_cache) if args.model_cache else None,
    )


def _config_and_plan(args):
    """The config (a YAML file or the workflow's JSON) and its plan, built once."""
    from .config import build_plan
    from .fetch import resolve_mirror

    if args.config_json:
        config = json.loads(args.config_json)
    else:
        import yaml

        from .config_schema import SCHEMA, check_config

        config = yaml.safe_load(Path(args.config).read_text())
        if SCHEMA.is_file():  # beside a clone's workflow; an installed package has none
            check_config(config, [args.config])
    return config, build_plan(config, resolve_mirror(config.get("mirror")))


def _report(args) -> None:
    from .config import config_hash
    from .report import write_report

    config, plan = _config_and_plan(args)
    write_report(plan, config, config_hash(config), Path(args.out_dir))


def _compare(args) -> None:
    from .report.comparisons import compare_two

    if args.scores:
        from .report.question_scores import read_question_scores

        table = read_question_scores([Path(f) for f in args.scores])
    else:
        from .report.question_scores import question_score_table
        from .report.records import load_scores

        _, plan = _config_and_plan(args)
        table = question_score_table(plan, load_scores(plan), "")
    rows = compare_two(table, args.a, args.b)
    print("task\tmetric\tn\ta\tb\ta-b\tp")
    for r in rows:
        print(
            f"{r['task']}\t{r['metric']}\t{r['n']}\t{r['score_a']:.4f}\t{r['score_b']:.4f}"
            f"\t{r['difference']:+.4f}\t{r['p_value']:.4f}"
        )


def _plan(args) -> None:
    from .fetch import resolve_mirror
    from .questions import local_question_table
    from .report.question_bank import overlap_summary
    from .runner import answered_by, run_questions

    config, plan = _config_and_plan(args)
    questions = local_question_table(resolve_mirror(config.get("mirror")))
    for run in plan.runs:
        print(f"{run.model}\t{run.method}\t{run.shards} shard(s)")
        if questions is None:
            for task in run.tasks:
                print(f"\t{task.benchmark}\t{task.task}")
            continue
        spec = run.spec()
        asked = {q.id for _, q in run_questions(questions, spec)}
        repeats = answered_by(questions, spec)
        for task in run.tasks:
            of_task = [q for q in questions if (q.benchmark, q.task) == (task.benchmark, task.task)]
            ids = {q.id for q in of_task}
            line = f"\t{task.benchmark}\t{task.task}\t{len(of_task)} questions"
            if spec.get("sample"):
                line += f", {len(ids & (asked | set(repeats)))} sampled"
            shared = sum(q.overlap is not None for q in of_task)
            if shared:
                line += f"; {shared} shared with GeneTuring/GeneHop"
            if ids & set(repeats):
                line += f", {len(ids & set(repeats))} answered by the same question asked once"
            print(line)
        print(f"\t{len(asked)} questions asked")
    for note in plan.notes:
        where = f"{note['model']} / {note['method']} ({note['benchmark']})"
        print(f"{note['level']}: {where}: {note['message']}")
    if questions is None:
        print("question counts: the benchmark files are not here yet (no mirror, not fetched)")
        return
    for line in overlap_summary(questions):
        print(f"overlap: {line}")


def _status(args) -> None:
    from .progress import format_statuses, shard_statuses

    statuses = shard_statuses(Path(args.runs))
    if args.json:
        from dataclasses import asdict

        print(json.dumps([asdict(s) for s in statuses], indent=1))
    elif statuses:
        print(format_statuses(statuses))
    else:
        print(f"no shard under {args.runs} yet")


def _recordings(args) -> None:
    from .fetch import resolve_mirror
    from .recordings import loop_table

    print("recording\trun\ttasks\tread\tmax_calls\turl_rule\tcapped_at\tcontradictions")
    for row in loop_table(resolve_mirror(args.mirror)):
        if not row["read"]:
            print(f"{row['recording']}\t{row['run']}\t{row['tasks']}\t0\t\t\t\t")
            continue
        caps = "/".join(str(cap or "-") for cap, _ in row["variants"])
        rules = "/".join(rule for _, rule in row["variants"])
        print(
            f"{row['recording']}\t{row['run']}\t{row['tasks']}\t{row['read']}\t{caps}\t{rules}"
            f"\t{row['capped_at']}\t{row['contradictions']}"
        )


def main(argv: list[str] | None = None) -> None:
    # Before anything imports torch: see helixbench.models.local.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = argparse.ArgumentParser(prog="helixbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fetch", help="fetch one pinned upstream file to resources/upstream/")
    p.add_argument("output")
    p.add_argument("--mirror", help="mirror directory (HELIXBENCH_MIRROR overrides)")
    p.add_argument("--lock", required=True, help="lock file for checksums not pinned upstream")
    p.add_argument("--url", help="URL of a file the config pins (not in the manifest)")
    p.add_argument("--sha256", help="its pinned sha256 (or 'unknown': taken into the lock file)")
    p.set_defaults(func=_fetch)

    p = sub.add_parser("questions", help="write the question table")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_questions)

    p = sub.add_parser("snapshot", help="extract a recorded run's demonstration snapshot")
    p.add_argument("--recording", required=True)
    p.add_argument("--recording-name", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--mask", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_snapshot)

    p = sub.add_parser("live-snapshot", help="take a demonstration snapshot through the tools")
    p.add_argument("--name", required=True)
    p.add_argument("--mode", default="refresh", choices=["offline", "live", "refresh"])
    p.add_argument("--out", required=True)
    p.set_defaults(func=_live_snapshot)

    p = sub.add_parser("seed-cache", help="seed the tool cache from recorded runs")
    p.add_argument("--recording", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--out", required=True, help="summary JSON that marks the seed done")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=_seed_cache)

    p = sub.add_parser("run", help="run one shard of a run (model x method, over its tasks)")
    p.add_argument(
        "--spec",
        required=True,
        help="the run's JSON spec from the plan (its tasks name their recordings and snapshots)",
    )
    p.add_argument("--shard", type=int, required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--model-cache", help="SQLite response cache of model calls")
    p.add_argument("--model-dir", help="a local model converted by prepare-model")
    p.add_argument("--threads", type=int, help="CPU threads a local model may use")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_run)

    p = sub.add_parser("prepare-model", help="convert a local GGUF model for fast loading")
    p.add_argument("--spec", required=True, help="the model's config entry as JSON")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_prepare_model)

    p = sub.add_parser("index", help="chunk, embed and index a corpus (brad methods)")
    p.add_argument("--settings", required=True, help="the index's settings as JSON")
    p.add_argument("--out", required=True, help="the index's marker file (index.json)")
    p.set_defaults(func=_index)

    p = sub.add_parser("score", help="score a run's shards per question")
    p.add_argument("--spec", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--scoring", required=True, help="the config's scoring section as JSON")
    p.add_argument(
        "--scorer-models",
        help="config entries (name -> spec, JSON) of the models the scorers ask (judge, extractor)",
    )
    p.add_argument("--model-cache", help="SQLite response cache of the judge's calls")
    p.add_argument("--out", required=True)
    p.add_argument("shards", nargs="+")
    p.set_defaults(func=_score)

    p = sub.add_parser(
        "recordings",
        help="list the recorded runs upstream holds and the loop variant each file shows",
    )
    p.add_argument("--mirror", help="mirror directory (HELIXBENCH_MIRROR overrides)")
    p.set_defaults(func=_recordings)

    p = sub.add_parser(
        "status",
        help="progress of every run shard of the working directory (reads, never writes)",
    )
    p.add_argument("--runs", default="results/runs", help="the runs directory")
    p.add_argument("--json", action="store_true", help="one JSON object per shard")
    p.set_defaults(func=_status)

    for name, func, text in (
        ("report", _report, "write results/report/"),
        ("compare", _compare, "paired test of two runs (--a, --b: 'model / method')"),
        ("plan", _plan, "show the plan"),
    ):
        p = sub.add_parser(name, help=text)
        group = p.add_mutually_exclusive_group(required=True)
        group.add_argument("--config", help="config YAML file")
        group.add_argument("--config-json", help="the validated config as JSON")
        if name == "compare":
            group.add_argument(
                "--scores",
                nargs="+",
                help="per-question score tables (question_scores.parquet or .csv; several "
                "working directories' at once) instead of a config",
            )
        if name == "report":
            p.add_argument("--out-dir", required=True)
        if name == "compare":
            p.add_argument("--a", required=True, help="a run, 'model / method'")
            p.add_argument("--b", required=True, help="another run")
        p.set_defaults(func=func)

    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    from . import secrets

    # Keys from the environment never reach a log line (backends register theirs too).
    secrets.register_env()
    for handler in logging.getLogger().handlers:
        handler.addFilter(secrets.RedactingFilter())
    from .errors import ConfigError, DataError
    from .fetch import FetchError
    from .models import ModelError
    from .snapshots import SnapshotError

    try:
        args.func(args)
    except (
        FetchError,
        ConfigError,
        SnapshotError,
        ModelError,
        DataError,
    ) as exc:  # expected: the message says it all
        print(f"error: {secrets.redact(str(exc))}", file=sys.stderr)
        raise SystemExit(1) from None
    except Exception as exc:  # unexpected: the traceback, then a one-line summary
        logging.exception("helixbench %s failed", args.command)
        print(f"error: {secrets.redact(str(exc))}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
