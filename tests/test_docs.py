"""The docs: the site builds with no broken link or anchor, the config reference
comes from the schema, every command-line option says what it is, and the commands
the docs repeat are the README's."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helixbench.cli import build_parser
from helixbench.config.reference import reference_markdown, undescribed_keys

from .conftest import REPO_ROOT


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", text, re.S)


def test_the_site_builds_strict(tmp_path):
    """`mkdocs build --strict`: a link to a missing page or anchor fails it."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    config_page = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "tools.blast.poll_interval_s" in config_page


def test_the_config_reference_is_the_schema_and_says_something_of_every_key():
    assert undescribed_keys() == []
    text = reference_markdown()
    for key in ("mirror", "models.&lt;name&gt;.backend", "runs[].sample", "tools.http.retries"):
        assert key.replace("&lt;", "<").replace("&gt;", ">") in text, key


def test_every_command_line_option_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        f"{name} {action.dest}"
        for name, command in sub.choices.items()
        for action in command._actions
        if action.help is None and not isinstance(action, argparse._HelpAction)
    ]
    assert missing == []


def test_the_readme_links_to_pages_that_exist_and_the_docs_repeat_its_commands():
    readme = (REPO_ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#:]+)", readme)  # (every relative link: it opens on GitHub too)
    assert links and all((REPO_ROOT / link).exists() for link in links), links
    started = (REPO_ROOT / "docs" / "getting-started.md").read_text()
    assert _bash_blocks(readme)[:2] == _bash_blocks(started)[:2]
    assert len(readme.splitlines()) <= 160


@pytest.mark.parametrize("typed", ["stauts", "plna"])
def test_a_mistyped_command_says_what_was_meant(typed, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([typed])
    err = capsys.readouterr().err
    assert "did you mean" in err and "known: plan, status, compare, recordings, cache" in err


def test_the_install_script_names_what_is_wrong(tmp_path):
    """The README's install step, given an extra that does not exist or run outside
    a virtual environment, says so in one line and installs nothing."""
    script = str(REPO_ROOT / "scripts" / "install.py")
    done = subprocess.run([sys.executable, script, "lcoal"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "unknown extra 'lcoal' (known: local, test)" in done.stderr
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    outside = subprocess.run([str(base), script, "local"], capture_output=True, text=True)
    assert outside.returncode == 2 and "activate a virtual environment first" in outside.stderr
