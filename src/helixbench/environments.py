"""Builds a seed system's own environment (``workflow/envs/originals/<name>.yaml``)
and writes its marker, ``env.json``: the interpreter, the packages as installed,
how it was built and how long that took (the ``original_env`` rule).

Where conda is absent the environment is a venv of the job's Python with the
file's ``pip:`` pins; under ``--sdm conda`` Snakemake has built the file's
environment and runs this in it (``--in-place``): the marker then names that
environment's interpreter. Standard library only (besides PyYAML and uv for the
venv), so that it runs in either.

The venv's packages are installed by uv (a tenth of pip's time: it resolves and
fetches in parallel) from the registries pip is set to use: pip's own settings (its
files and ``PIP_*`` variables) are passed on, so both read the same indexes.

The job: helixbench env ENV_FILE --out DIR/env.json [--in-place]
"""

from __future__ import annotations

import ast
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


# pip's settings that say where packages come from, and how uv is told each.
_PIP_TO_UV = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraints",
    "trusted-host": "--allow-insecure-host",
}
_PIP_TO_UV_ENV = {"cert": "SSL_CERT_FILE", "client-cert": "SSL_CLIENT_CERT"}


def pip_settings() -> dict[str, str]:
    """pip's configuration as pip reads it (``pip config list``: its files, then the
    ``PIP_*`` variables), the most specific place winning for each setting."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    found: dict[str, dict[str, str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if name and value:
            found.setdefault(section, {})[name] = ast.literal_eval(value)
    # pip reads [global], then [install] for an install, then its variables.
    return {k: v for s in ("global", "install", ":env:") for k, v in found.get(s, {}).items()}


def uv_command(python: str, settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``uv pip install`` into ``python``'s environment from pip's registries
    (``settings``, see :func:`pip_settings`), and the variables it needs."""
    from uv import find_uv_bin

    # pip takes a package's best version from every index alike; uv's default
    # would stop at the first index that has the name.
    command = [find_uv_bin(), "pip", "install", "--python", python]
    command += ["--index-strategy", "unsafe-best-match"]
    for name, flag in _PIP_TO_UV.items():
        for value in settings.get(name, "").split():
            command += [flag, value]
    if settings.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        command.append("--no-index")
    env = {var: settings[name] for name, var in _PIP_TO_UV_ENV.items() if settings.get(name)}
    if settings.get("default-timeout"):
        env["UV_HTTP_TIMEOUT"] = settings["default-timeout"]
    return command, env


def install_packages(python: str, requirements: list[str], byte_compile: bool = True) -> None:
    """Install ``requirements`` (pip's requirement specifiers, and options such as
    ``-e`` or ``--no-deps``) into the environment of ``python`` with uv, byte-compiled
    unless ``byte_compile`` is false (a tool run once or twice: compiling all of it costs
    more than the few modules it imports)."""
    command, extra = uv_command(python, pip_settings())
    if byte_compile:
        # On every core, now: Python never writes its caches where
        # PYTHONDONTWRITEBYTECODE is set or the agent sandbox shows the environment
        # read-only, and would compile each module at every import there (PyTorch's
        # take half a minute). A file no Python of this version compiles is left as is.
        command.append("--compile-bytecode")
    env = {**os.environ, **extra}
    # Once more on failure: a download cut short by the registry fails its hash
    # check, and a second try fetches it whole (a pin that cannot resolve fails again).
    if subprocess.run([*command, *requirements], env=env).returncode != 0:
        subprocess.run([*command, *requirements], env=env, check=True)


def _ask(python: str, code: str) -> str:
    """What ``code`` prints when ``python`` runs it."""
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def build(env_file: Path, out: Path, in_place: bool = False, byte_compile: bool = True) -> dict:
    """Build the environment of ``env_file`` and write its marker ``out``
    (``byte_compile``: as :func:`install_packages` takes it)."""
    started = time.perf_counter()
    if in_place:
        python, built_with, pins = sys.executable, "conda", []
    else:
        pins = pip_pins(env_file)
        target = out.parent / "venv"
        venv.EnvBuilder(clear=True, with_pip=False).create(target)
        python = str((target / "bin" / "python").resolve())
        # pip too (the marker's freeze, a job's download), from the same registries.
        install_packages(python, ["pip", *pins], byte_compile=byte_compile)
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
