"""The per-rule conda environments (workflow/envs/) as data, and a way to run
helixbench as if only one of them were installed: every other package the project
depends on raises ModuleNotFoundError on import, as it would there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .conftest import REPO_ROOT

ENVS_DIR = REPO_ROOT / "workflow" / "envs"
# conda-forge names of the packages PyPI names otherwise.
CONDA_NAMES = {
    "matplotlib-base": "matplotlib",
    "snakemake-minimal": "snakemake",
    "python-duckdb": "duckdb",
}
# What any conda Python has besides the environment's own packages.
BASE = {"python", "pip", "setuptools", "wheel"}


def env_files() -> list[Path]:
    return sorted(ENVS_DIR.glob("*.yaml"))


def env_requirements(path: Path) -> list[Requirement]:
    """The packages an environment file names, by their PyPI names (python and pip
    left out)."""
    spec = yaml.safe_load(path.read_text())
    requirements = []
    for dependency in spec["dependencies"]:
        for entry in dependency["pip"] if isinstance(dependency, dict) else [dependency]:
            name = re.split(r"[=<>!~ ]", entry, maxsplit=1)[0]
            if name in BASE:
                continue
            requirement = Requirement(CONDA_NAMES.get(name, name) + entry[len(name) :])
            requirements.append(requirement)
    return requirements


@cache
def project_requirements() -> dict[str, Requirement]:
    """What pyproject.toml names: the dependencies and the extra ``local``."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    entries = project["dependencies"] + project["optional-dependencies"]["local"]
    return {canonicalize_name(Requirement(e).name): Requirement(e) for e in entries}


def _closure(names: set[str]) -> set[str]:
    """The distributions ``names`` bring with them (installed ones, markers applied)."""
    environment = {**default_environment(), "extra": ""}
    seen, todo = set(), [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for entry in requires:
            requirement = Requirement(entry)
            if requirement.marker is None or requirement.marker.evaluate(environment):
                todo.append(canonicalize_name(requirement.name))
    return seen


def blocked_modules(env: Path) -> list[str]:
    """Top-level modules of the project's dependencies that ``env`` does not bring."""
    provided = _closure({r.name for r in env_requirements(env)} | BASE)
    everything = _closure(set(project_requirements()))
    modules = {}
    for module, dists in metadata.packages_distributions().items():
        for dist in dists:
            modules.setdefault(canonicalize_name(dist), set()).add(module)
    blocked = set()
    for dist in everything - provided:
        blocked |= {m for m in modules.get(dist, ()) if not m.startswith("_")}
    return sorted(blocked)


BLOCKER = """
import importlib.abc, json, os, sys
BLOCKED = set(json.loads(os.environ["HELIXBENCH_TEST_BLOCKED"]))
class NotInEnvironment(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (not in this environment)",
                                      name=name)
sys.meta_path.insert(0, NotInEnvironment())
from helixbench.cli import main
main(sys.argv[1:])
"""


def helixbench_in_env(env: str, args: list[str], cwd: Path, **kwargs):
    """Run ``helixbench args`` in a process where only ``workflow/envs/<env>.yaml``'s
    packages (and what they bring) can be imported among the project's dependencies."""
    blocked = blocked_modules(ENVS_DIR / f"{env}.yaml")
    environment = {
        **os.environ,
        "HELIXBENCH_TEST_BLOCKED": json.dumps(blocked),
        "PYTHONPATH": str(REPO_ROOT / "src"),
    }
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )
