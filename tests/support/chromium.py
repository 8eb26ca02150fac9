"""Headless Chromium (Debian's ``chromium``) on a local file: the DOM after its
scripts ran, and a screenshot. A fresh profile each time and no background
networking: the page must stand on its own."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=10000",
)


def _chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("chromium is not installed (apt-get install chromium; .ci/run does)")
    return binary


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    if profile.exists():
        shutil.rmtree(profile)
    return subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def dump_dom(page: Path | str, profile: Path) -> tuple[str, str]:
    """The page's DOM after its scripts ran, and Chromium's log (console messages);
    ``page``: a file, or a file:// URL (with a fragment, say)."""
    uri = page if isinstance(page, str) else page.resolve().as_uri()
    done = _run(["--dump-dom", uri], profile)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def screenshot(page: Path, out: Path, profile: Path) -> None:
    done = _run(
        [f"--screenshot={out.resolve()}", "--window-size=1280,2400", page.resolve().as_uri()],
        profile,
    )
    assert done.returncode == 0 and out.exists(), done.stderr[-3000:]
