"""The workflow's jobs: one function per rule's command (``helixbench fetch``, ``run``,
``score``, ...). Snakemake calls them with the arguments its rules build; they are
not meant to be typed, and ``helixbench --help`` leaves them out."""

from __future__ import annotations

import json
import logging
from pathlib import Path


def fetch(args) -> None:
    from ..datasets.fetch import fetch_local, resolve_mirror

    if args.url and len(args.output) > 1:
        raise SystemExit("fetch: --url and --sha256 pin one file")
    mirror = resolve_mirror(args.mirror)
    for output in args.output:  # one process for many: a job's start costs more than a copy
        digest = fetch_local(Path(output), mirror, Path(args.lock), args.url, args.sha256)
        logging.info("fetched %s (sha256 %s)", output, digest)


def questions(args) -> None:
    from ..benchmarks import write_question_table

    count = write_question_table(Path(args.out))
    logging.info("wrote %d questions to %s", count, args.out)


def snapshot(args) -> None:
    from ..methods.genegpt import snapshot_of_recording

    snapshot = snapshot_of_recording(Path(args.recording), args.recording_name, args.url, args.mask)
    snapshot.save(Path(args.out))
    logging.info("snapshot %s from %s", snapshot.id, args.url)


def live_snapshot(args) -> None:
    from ..methods.genegpt import take_live_snapshot

    snapshot = take_live_snapshot(args.name, args.mode)
    snapshot.save(Path(args.out))
    logging.info("snapshot %s (%s) taken %s", snapshot.id, args.name, snapshot.source["taken_at"])


def seed_cache(args) -> None:
    from ..tools.cache import ReplyCache
    from ..tools.seed import seed_from_recordings

    seeded = seed_from_recordings(args.recording, ReplyCache(Path(args.cache)), args.files)
    for file in seeded:
        logging.info("%s: %d recorded replies, %d new", file["url"], file["replies"], file["added"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {"recording": args.recording, "cache": args.cache, "files": seeded}
    out.write_text(json.dumps(summary, indent=1) + "\n")


def run(args) -> None:
    from ..run.progress import log_to_file
    from ..run.shard import run_shard

    console = log_to_file(Path(args.log)) if args.log else None
    run_shard(
        json.loads(args.spec),
        args.shard,
        Path(args.questions),
        Path(args.out),
        model_cache=Path(args.model_cache) if args.model_cache else None,
        model_dir=Path(args.model_dir) if args.model_dir else None,
        threads=args.threads,
        console=console,
    )


def prepare_model(args) -> None:
    from ..models.convert import convert_gguf

    info = convert_gguf(json.loads(args.spec), Path(args.out))
    logging.info("converted %s to %s", info["identity"], args.out)


def index(args) -> None:
    from ..paths import upstream_path
    from ..retrieval import build_index

    facts = build_index(
        json.loads(args.settings), lambda f: Path(upstream_path(f)), Path(args.out).parent
    )
    logging.info("built index %s", json.dumps(facts))


def score(args) -> None:
    """One run's scores, judge calls and summary, written under a staging folder and
    moved in place once the run is done (a failed one keeps every earlier file and
    leaves a note beside them: :mod:`..run.scoring_state`)."""
    from ..run.scoring_state import staged_outputs
    from ..scoring.batch import score_and_summarize

    if args.summary and not args.details:
        raise SystemExit("score: --summary needs --details (the run's questions for the page)")
    scores = Path(args.out)
    finals = [scores] + [Path(p) for p in (args.judge_calls, args.summary, args.details) if p]
    if args.summary:  # (and the summary's other files, beside it)
        finals += [Path(args.summary).with_name(n) for n in ("prompts.json", "scores.parquet")]
    root = scores.with_name(scores.name + ".staged")
    with staged_outputs(scores, finals, root) as staged:
        summary = staged[Path(args.summary)] if args.summary else None
        score_and_summarize(
            json.loads(args.spec),
            json.loads(args.scoring),
            Path(args.questions),
            [Path(p) for p in args.shards],
            scores=staged[scores],
            judge_calls=staged[Path(args.judge_calls)] if args.judge_calls else None,
            summary_dir=summary.parent if summary else None,
            details=staged[Path(args.details)] if args.details else None,
            scorer_models=json.loads(args.scorer_models) if args.scorer_models else None,
            model_cache=Path(args.model_cache) if args.model_cache else None,
            background=Path(args.background) if args.background else None,
            ragas_env=args.ragas_env,
        )


def background(args) -> None:
    from ..scoring import Scorers
    from ..scoring.background import read_background, write_background

    go = [Path(p) for p in args.go] if args.go else None
    count = write_background(Path(args.questions), go, Path(args.out))
    print(f"{count} background names")
    if args.model_cache:  # their embeddings, once for every score job that follows
        names = read_background(Path(args.out))
        scorers = Scorers(json.loads(args.scoring), model_cache=args.model_cache, candidates=names)
        scorers.get("percentile").warm()
        print(f"encoded by {scorers.scored_by('percentile')}")


def export(args) -> None:
    from ..report.exports.formats import export_run

    python = json.loads(Path(args.inspect_env).read_text())["python"] if args.inspect_env else None
    written = export_run(
        json.loads(args.spec),
        json.loads(args.scoring),
        Path(args.questions),
        [Path(p) for p in args.shards],
        Path(args.scores),
        Path(args.summary),
        Path(args.out),
        args.formats,
        inspect_python=python,
    )
    logging.info("exported %s", ", ".join(str(p) for p in written))


def report(args) -> None:
    from ..collector import rare_collections
    from ..config import config_hash
    from ..report.build import write_report
    from .commands import config_and_plan

    config, plan = config_and_plan(args)
    sources = json.loads(args.config_sources) if args.config_sources else args.config
    with rare_collections():  # (a sweep's report holds millions of objects)
        write_report(plan, config, config_hash(config), Path(args.out_dir), sources)
    from .. import paths
    from ..report.page.summary import console_summary

    paths.show_report(args.out_dir)  # results/report: this config's report, from now
    ending = Path(paths.REPORT_CONSOLE_SUMMARY)
    ending.parent.mkdir(parents=True, exist_ok=True)
    shown = Path.cwd() / paths.REPORT_DIR  # (the link a reader opens, not where it points)
    ending.write_text(console_summary(shown) + "\n", encoding="utf-8")


def environment(args) -> None:
    from ..environments import build

    marker = build(Path(args.env_file), Path(args.out), args.in_place)
    logging.info(
        "%s: %d packages in %s s", marker["name"], len(marker["packages"]), marker["install_s"]
    )


def prepare_original(args) -> None:
    from ..methods.originals import prepare

    prepare(args.original, args.env, Path(args.out))


def peer_templates(args) -> None:
    from ..methods.choices import write_templates

    templates = write_templates(args.env, Path(args.out))
    logging.info("read %s", ", ".join(t["package"] for t in templates.values()))
