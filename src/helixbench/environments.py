"""Builds a seed system's own environment (``workflow/envs/originals/<name>.yaml``)
and writes its marker, ``env.json``: the interpreter, the packages as installed,
how it was built and how long that took (the ``original_env`` rule).

Where conda is absent the environment is a venv of the job's Python with the
file's ``pip:`` pins; under ``--sdm conda`` Snakemake has built the file's
environment and runs this in it (``--in-place``): the marker then names that
environment's interpreter. Standard library only (besides PyYAML for the venv),
so that it runs in either.

The job: helixbench env ENV_FILE --out DIR/env.json [--in-place]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path


def environment_python(marker: str) -> str:
    """The interpreter of an environment the ``original_env`` rule built (its marker)."""
    try:
        return json.loads(Path(marker).read_text())["python"]
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{marker}: not a built environment ({exc})") from None


def pip_pins(env_file: Path) -> list[str]:
    """The ``pip:`` entries of a conda environment file."""
    import yaml

    spec = yaml.safe_load(env_file.read_text())
    entries = spec.get("dependencies", [])
    pins = [p for d in entries if isinstance(d, dict) for p in d.get("pip", [])]
    if not pins:
        raise ValueError(f"{env_file}: no pip: packages")
    return [str(p) for p in pins]


def freeze(python: str) -> list[str]:
    out = subprocess.run(
        [python, "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(line for line in out.stdout.splitlines() if line and not line.startswith("#"))


def _ask(python: str, code: str) -> str:
    """What ``code`` prints when ``python`` runs it."""
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def build(env_file: Path, out: Path, in_place: bool = False) -> dict:
    started = time.perf_counter()
    if in_place:
        python, built_with, pins = sys.executable, "conda", []
    else:
        pins = pip_pins(env_file)
        target = out.parent / "venv"
        venv.EnvBuilder(clear=True, with_pip=True).create(target)
        python = str((target / "bin" / "python").resolve())
        install = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-compile"]
        # Once more on failure: a download cut short by the registry fails pip's hash
        # check, and a second try fetches it whole (a pin that cannot resolve fails again).
        if subprocess.run([*install, *pins]).returncode != 0:
            subprocess.run([*install, *pins], check=True)
        # Byte-compiled on every core at once (pip compiles file by file, a third of
        # the build), so that code run later from a read-only mount need not compile.
        # Some packages ship files no Python 3 compiles; pip skips them too.
        site = _ask(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
        subprocess.run([python, "-m", "compileall", "-q", "-j", "0", site], capture_output=True)
        built_with = "venv"
    version = _ask(python, "import platform; print(platform.python_version())")
    marker = {
        "name": env_file.stem,
        "python": python,
        "python_version": version,
        "built_with": built_with,
        "requirements": pins,
        "packages": freeze(python),
        "install_s": round(time.perf_counter() - started, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(marker, indent=1) + "\n")
    os.replace(tmp, out)
    return marker
