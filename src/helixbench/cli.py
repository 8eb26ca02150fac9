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
    from . import paths
    from .fetch import fetch, resolve_mirror
    from .upstream import manifest, url_relpath

    rel = Path(args.output).relative_to(paths.UPSTREAM_DIR).as_posix()
    entry = manifest().get(rel)
    if entry is not None:
        url, sha256 = entry.url, entry.sha256
    elif args.url and args.sha256:  # pinned by the config (an imported source's file)
        url, sha256 = args.url, args.sha256
        if url_relpath(url) != rel:
            raise SystemExit(f"error: {url} does not map onto {args.output}")
    else:
        raise SystemExit(f"error: {args.output} is not a pinned upstream file")
    digest = fetch(url, Path(args.output), sha256, resolve_mirror(args.mirror), Path(args.lock))
    logging.info("fetched %s (sha256 %s)", url, digest)


def _questions(args) -> None:
    from .benchmarks import load_all, write_questions
    from .plan import upstream_path

    questions = load_all(lambda file: Path(upstream_path(file)))
    write_questions(questions, Path(args.out))
    logging.info("wrote %d questions to %s", len(questions), args.out)


def _snapshot(args) -> None:
    from .methods.genegpt import recorded_snapshot
    from .recordings import load_recording, recorded_header

    header = recorded_header(load_recording(Path(args.recording)))
    source = {"kind": "recorded", "recording": args.recording_name, "url": args.url}
    snapshot = recorded_snapshot(header, args.mask, source)
    snapshot.save(Path(args.out))
    logging.info("snapshot %s from %s", snapshot.id, args.url)


def _live_snapshot(args) -> None:
    from .methods.genegpt import take_snapshot
    from .tools import tool_settings
    from .tools.cache import utc_now
    from .tools.executor import ToolExecutor, ToolSettings

    settings = ToolSettings.from_config(tool_settings(args.mode))
    source = {"kind": "live", "name": args.name, "taken_at": utc_now(), "tools_mode": settings.mode}
    snapshot = take_snapshot(ToolExecutor(settings), source)
    snapshot.save(Path(args.out))
    logging.info("snapshot %s (%s) taken %s", snapshot.id, args.name, source["taken_at"])


def _seed_cache(args) -> None:
    from . import paths
    from .recordings import RecordingReader
    from .tools.cache import ReplyCache, recorded_replies
    from .upstream import relpath_url

    cache = ReplyCache(Path(args.cache))
    recordings = RecordingReader()
    # The files of one recorded run (one directory) tell its loop variant together.
    runs: dict[str, list[str]] = {}
    for path in args.files:
        runs.setdefault(str(Path(path).parent), []).append(path)
    seeded = []
    for path in args.files:
        url = relpath_url(Path(path).relative_to(paths.UPSTREAM_DIR).as_posix())
        loop = recordings.loop(path, runs[str(Path(path).parent)])
        entries = recorded_replies(
            recordings.items(path), f"seed:{args.recording}", "recorded", url_rule=loop.url_rule
        )
        added = cache.put_many(entries, replace=False)
        seeded.append(
            {"url": url, "replies": len(entries), "added": added, "url_rule": loop.url_rule}
        )
        logging.info("%s: %d recorded replies, %d new in the cache", url, len(entries), added)
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
    from .models.local import convert_gguf

    info = convert_gguf(json.loads(args.spec), Path(args.out))
    logging.info("converted %s to %s", info["identity"], args.out)


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


def _load_config(args) -> dict:
    if args.config_json:
        return json.loads(args.config_json)
    import yaml

    return yaml.safe_load(Path(args.config).read_text())


def _report(args) -> None:
    from .fetch import resolve_mirror
    from .plan import build_plan, config_hash
    from .report import write_report

    config = _load_config(args)
    plan = build_plan(config, resolve_mirror(config.get("mirror")))
    write_report(plan, config, config_hash(config), Path(args.out_dir))


def _compare(args) -> None:
    from .fetch import resolve_mirror
    from .plan import build_plan
    from .report import compare_runs, load_scores, score_index

    config = _load_config(args)
    plan = build_plan(config, resolve_mirror(config.get("mirror")))
    scores = score_index(load_scores(plan))
    labels = {r.label: r for r in plan.runs}
    for name in (args.a, args.b):
        if name not in labels:
            raise SystemExit(f"error: no run {name!r}; runs: {', '.join(labels)}")
    shared = [
        (t.benchmark, t.task)
        for t in labels[args.a].tasks
        if any((u.benchmark, u.task) == (t.benchmark, t.task) for u in labels[args.b].tasks)
    ]
    rows = [row for b, t in shared for row in compare_runs(plan, scores, args.a, args.b, b, t)]
    if not rows:
        raise SystemExit("error: the two runs share no scored question")
    print("task\tmetric\tn\ta\tb\ta-b\tp")
    for r in rows:
        print(
            f"{r['task']}\t{r['metric']}\t{r['n']}\t{r['score_a']:.4f}\t{r['score_b']:.4f}"
            f"\t{r['difference']:+.4f}\t{r['p_value']:.4f}"
        )


def _plan(args) -> None:
    from .fetch import resolve_mirror
    from .plan import build_plan

    config = _load_config(args)
    plan = build_plan(config, resolve_mirror(config.get("mirror")))
    for run in plan.runs:
        print(f"{run.model}\t{run.method}\t{run.shards} shard(s)")
        for task in run.tasks:
            print(f"\t{task.benchmark}\t{task.task}")
    for note in plan.notes:
        where = f"{note['model']} / {note['method']} ({note['benchmark']})"
        print(f"{note['level']}: {where}: {note['message']}")


def _recordings(args) -> None:
    from .fetch import mirror_path, resolve_mirror
    from .plan import upstream_path
    from .recordings import RECORDINGS, RecordingReader, recorded_runs

    mirror = resolve_mirror(args.mirror)
    reader = RecordingReader()
    print("recording\trun\ttasks\tread\tmax_calls\turl_rule\tcapped_at\tcontradictions")
    for name, spec in RECORDINGS.items():
        for benchmark in spec["dirs"]:
            by_dir: dict[str, list] = {}
            for run in recorded_runs(name, benchmark, None):
                by_dir.setdefault(run.run_dir, []).append(run)
            for run_dir, runs in by_dir.items():
                local = [
                    mirror_path(r.file.url, mirror) if mirror else Path(upstream_path(r.file))
                    for r in runs
                ]
                group = [str(p) for p in local if p.is_file()]
                if not group:
                    print(f"{name}\t{run_dir}\t{len(runs)}\t0\t\t\t\t")
                    continue
                loops = [reader.loop(path, group) for path in group]
                caps = sorted({c for lp in loops for c in lp.evidence["capped_at"]})
                wrong = {
                    r: sum(lp.evidence["contradictions"][r] for lp in loops)
                    for r in ("first", "last")
                }
                variants = sorted({(str(lp.max_calls or "-"), lp.url_rule) for lp in loops})
                print(
                    f"{name}\t{run_dir}\t{len(runs)}\t{len(group)}\t"
                    + "\t".join("/".join(v) for v in zip(*variants, strict=True))
                    + f"\t{caps}\t{wrong}"
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

    for name, func, text in (
        ("report", _report, "write results/report/"),
        ("compare", _compare, "paired test of two runs (--a, --b: 'model / method')"),
        ("plan", _plan, "show the plan"),
    ):
        p = sub.add_parser(name, help=text)
        group = p.add_mutually_exclusive_group(required=True)
        group.add_argument("--config", help="config YAML file")
        group.add_argument("--config-json", help="the validated config as JSON")
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
