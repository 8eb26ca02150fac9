"""What a run will need, checked before it runs (``helixbench plan --check``): the API
keys its models read from the environment, the model servers it will call (each
probed once, briefly), and the upstream files a mirror must hold. Each problem is
named per run, so a sweep's user sees which runs would fail and why.
"""

from __future__ import annotations

import os
from pathlib import Path

import requests

from ..models.openai_api import DEFAULT_BASE_URL
from ..paths import UPSTREAM_STORE, upstream_path
from .plan import Plan

PROBE_TIMEOUT_S = 3.0


def run_problems(plan: Plan, mirror: Path | None, runs=None) -> list[tuple[str, str]]:
    """(run label, problem) for everything a planned run (of ``runs``: all by default)
    needs and lacks."""
    checked = [(run.label, run.model_spec) for run in (plan.runs if runs is None else runs)]
    problems = _model_problems(checked, probe=True)
    if mirror is not None:
        for file in plan.upstream_files():
            if not (mirror / file.relpath).is_file() and not _here(file):
                problems.append(("all runs", f"the mirror {mirror} lacks {file.relpath}"))
    return problems


def scoring_problems(plan: Plan, probe: bool = True) -> list[tuple[str, str]]:
    """(``scoring.<role> (<model>)``, problem) for each model the scorers call (a judge,
    the extractor) that lacks its key, or (``probe``) whose server does not answer: its
    scores cannot be made. Without ``probe`` (the workflow's start, where every call a
    rescore makes may be in the response cache) only the keys are checked."""
    named = [(f"scoring.{role} ({name})", spec) for role, name, spec in plan.scoring_models()]
    return _model_problems(named, probe)


def _model_problems(checked: list[tuple[str, dict]], probe: bool) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    probed: dict[str, str | None] = {}  # a server probed once, however many runs use it
    for label, spec in checked:
        if spec.get("backend") != "openai":
            continue
        base_url = (spec.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        key_env = spec.get("api_key_env", "OPENAI_API_KEY")
        # OpenAI's own API needs a key; a server of your own needs one only if the
        # config names the variable.
        needs_key = base_url == DEFAULT_BASE_URL or "api_key_env" in spec
        if key_env and needs_key and not os.environ.get(key_env):
            problems.append(
                (label, f"{key_env} is not set (model {spec.get('model')}: {base_url})")
            )
            continue
        if not probe:
            continue
        if base_url not in probed:
            probed[base_url] = _probe(base_url, os.environ.get(key_env) if key_env else None)
        if probed[base_url]:
            problems.append((label, probed[base_url]))
    return problems


def downloads(plan: Plan, mirror: Path | None) -> list:
    """The upstream files the runs would fetch from their URLs: those neither here
    (fetched, or kept in the store) nor, with a mirror, in it."""
    if mirror is not None:
        return []
    return [file for file in plan.upstream_files() if not _here(file)]


def _here(file) -> bool:
    """An upstream file already on this machine: its copy, or the store's by sha256."""
    return Path(upstream_path(file)).is_file() or Path(UPSTREAM_STORE, file.sha256).is_file()


def _probe(base_url: str, key: str | None) -> str | None:
    """Why the server at ``base_url`` cannot be used, or None: ``GET /models`` answered
    (any HTTP status but a server error: it listens and speaks HTTP; 501, "not
    implemented", is a server that serves completions but lists no models)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        reply = requests.get(f"{base_url}/models", headers=headers, timeout=PROBE_TIMEOUT_S)
    except requests.RequestException as exc:
        reason = type(exc).__name__
        return f"no server answers at {base_url} ({reason} within {PROBE_TIMEOUT_S:g} s)"
    if reply.status_code in (401, 403):
        return f"{base_url} refuses the key ({reply.status_code})"
    if reply.status_code >= 500 and reply.status_code != 501:
        return f"{base_url} answers {reply.status_code}"
    return None
