"""Many runs scored in one process: a score job takes a batch of runs (the plan's, in
order, ``score_batch`` at a time), imports once, reads the question table once, loads the
encoder and a percentile background once, and scores and summarizes each run in turn.

Each run's files (its scores, judge calls and summary) are written under a staging
folder and moved in place when that run is done (:mod:`..run.scoring_state`), beside a
fingerprint of all that shaped them: its spec, the scoring section, the scorers' models,
the summary format, helixbench's own code and its shards' and inputs' sizes and times.
A run whose fingerprint is unchanged is not scored again: a run added to a finished
sweep is scored alone, and a batch cut short (one run that failed, a job killed)
resumes where it stopped. ``HELIXBENCH_RESCORE=1`` scores every run again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from functools import cache
from pathlib import Path

from .. import paths
from ..collector import collected_after
from ..digests import sha256_json

log = logging.getLogger("helixbench.score")
# Runs a score job scores (config: score_batch, "auto"): at least MIN_BATCH, and no more
# than MAX_BATCHES jobs a sweep. Each time a job ends, Snakemake looks at the inputs of
# every job still waiting (its scheduler's input sizes): a round costs about a
# millisecond a waiting run's shard, so a sweep's rounds cost jobs x runs. At 10,000
# runs, 400 jobs of 25 kept Snakemake's own process on 86% of a core.
MIN_BATCH = 25
MAX_BATCHES = 64


def batch_size(setting: int | str, runs: int) -> int:
    """Runs a score job scores: the config's ``score_batch`` as it says, or for "auto"
    :data:`MIN_BATCH`, or as many as keep ``runs`` to :data:`MAX_BATCHES` jobs."""
    if setting != "auto":
        return int(setting)
    return max(MIN_BATCH, math.ceil(runs / MAX_BATCHES))


@cache
def code_digest() -> str:
    """helixbench's own code (every module of the package): a new version rescores."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _stat(path) -> list | None:
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [str(path), found.st_size, found.st_mtime_ns]


def batch_jobs(plan, runs: list) -> list[dict]:
    """What a score job needs of each run of its batch, as JSON-able data (the rule's
    parameter: a run added or changed reruns its batch, never another)."""
    from .rag_assessment import applies as ragas_applies

    return [
        {
            "label": run.label,
            "spec": run.spec(),
            "shards": run.shard_paths(),
            "files": {
                "scores": run.score_path,
                "judge_calls": run.judge_calls_path,
                "summary": run.summary_path,
                "prompts": run.prompts_path,
                "table": run.score_table_path,
                "details": run.details_path,
                "fingerprint": run.fingerprint_path,
            },  # fmt: skip
            "staging": paths.STAGED_DIR.format(**run.wildcards),
            "background": plan.ranks_against_go(run),
            "ragas": ragas_applies(run.spec(), plan.scoring),
        }
        for run in runs
    ]


def fingerprint(job: dict, scoring: dict, scorer_models, questions: Path, background, ragas) -> str:
    return sha256_json(
        {
            "spec": job["spec"],
            "scoring": scoring,
            "models": scorer_models,
            "version": paths.RUN_SUMMARY_VERSION,
            "code": code_digest(),
            "inputs": [_stat(p) for p in [questions, *job["shards"], background]],
            "ragas_env": str(ragas) if ragas else None,
        }
    )


def is_current(job: dict, digest: str) -> bool:
    files = [Path(p) for p in job["files"].values()]
    if not all(p.is_file() for p in files):
        return False
    return Path(job["files"]["fingerprint"]).read_text().strip() == digest


def score_batch(
    jobs: list[dict],
    scoring: dict,
    scorer_models: dict | None,
    questions_path: Path,
    model_cache: Path | None = None,
    background: Path | None = None,
    ragas_env: str | None = None,
) -> dict[str, dict]:
    """Score and summarize each run of ``jobs`` (:func:`batch_jobs`) not current;
    returns run label -> what was done (``scored`` or ``current``, its fingerprint). A
    run that fails is recorded beside its scores and the others go on; then the job
    fails naming them."""
    from ..datasets.questions import read_questions
    from ..run.scoring_state import staged_outputs

    force = os.environ.get("HELIXBENCH_RESCORE") == "1"
    questions = read_questions(questions_path)
    shared: dict = {}
    done, failed = {}, {}
    for job in jobs:
        own_background = background if job["background"] else None
        own_ragas = ragas_env if job["ragas"] else None
        digest = fingerprint(job, scoring, scorer_models, questions_path, own_background, own_ragas)
        if not force and is_current(job, digest):
            done[job["label"]] = {"state": "current", "fingerprint": digest}
            continue
        files = {name: Path(p) for name, p in job["files"].items()}
        try:
            with (
                collected_after(),
                staged_outputs(
                    files["scores"], list(files.values()), Path(job["staging"])
                ) as staged,
            ):
                score_and_summarize(
                    job["spec"], scoring, questions_path, [Path(p) for p in job["shards"]],
                    scores=staged[files["scores"]], judge_calls=staged[files["judge_calls"]],
                    summary_dir=staged[files["summary"]].parent, details=staged[files["details"]],
                    scorer_models=scorer_models, model_cache=model_cache,
                    background=own_background, ragas_env=own_ragas,
                    questions=questions, shared=shared,
                )  # fmt: skip
                staged[files["fingerprint"]].write_text(digest + "\n")
        except Exception as exc:  # (recorded beside its scores; the batch goes on)
            log.exception("scoring %s failed", job["label"])
            failed[job["label"]] = f"{type(exc).__name__}: {exc}"
            continue
        done[job["label"]] = {"state": "scored", "fingerprint": digest}
        log.info("scored %s", job["label"])
    if failed:
        named = "; ".join(f"{label}: {error}" for label, error in failed.items())
        raise SystemExit(f"score: {len(failed)} of {len(jobs)} runs failed ({named})")
    return done


def score_and_summarize(
    spec: dict,
    scoring: dict,
    questions_path: Path,
    shards: list[Path],
    *,
    scores: Path,
    judge_calls: Path | None,
    summary_dir: Path | None,
    details: Path | None,
    scorer_models: dict | None = None,
    model_cache: Path | None = None,
    background: Path | None = None,
    ragas_env: str | None = None,
    questions: list | None = None,
    shared: dict | None = None,
) -> None:
    """A run's per-question scores and, with ``summary_dir``, its summary (one read of
    its records)."""
    from .run_scores import score_run

    shard_records, question_table, score_rows = score_run(
        spec, questions_path, shards, scores, scoring,
        scorer_models=scorer_models, model_cache=model_cache, background=background,
        ragas_env=ragas_env, judge_calls=judge_calls, questions=questions, shared=shared,
    )  # fmt: skip
    if summary_dir is None:
        return
    from ..report.run_share.run_summary import summarize_run

    summarize_run(
        spec, scoring, questions_path, shards, scores, summary_dir, details, judge_calls,
        shard_records, question_table, score_rows,
    )  # fmt: skip


def write_manifest(path: Path, done: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"runs": done}, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
