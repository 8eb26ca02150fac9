"""The workflow used as a Snakemake module (the route `snakedeploy deploy-workflow`
writes): a project directory of the user's own, with its own config/, whose Snakefile
loads this workflow from a local path; the rules and the jobs run the helixbench
package beside that workflow, not the one the user's environment may hold."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import yaml

from .conftest import REPO_ROOT

MODULE_SNAKEFILE = """\
configfile: "config/config.yaml"


module helixbench:
    snakefile:
        "{workflow}"
    config:
        config


use rule * from helixbench
"""


def test_the_workflow_runs_as_a_module_from_its_path_in_a_project_of_its_own(mirror, tmp_path):
    # A checkout elsewhere, whose package says when it is imported: the module's rules
    # and its jobs must run this copy (the test environment has another installed).
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO_ROOT / "workflow", checkout / "workflow")
    shutil.copytree(REPO_ROOT / "src", checkout / "src", ignore=shutil.ignore_patterns("*.pyc"))
    marker = tmp_path / "imported-from.txt"
    init = checkout / "src" / "helixbench" / "__init__.py"
    init.write_text(
        init.read_text() + "\nimport os as _os\n\nwith open(_os.environ['HELIXBENCH_TEST_MARKER'], "
        "'a') as _f:\n    _f.write(__file__ + '\\n')\n"
    )
    project = tmp_path / "project"
    (project / "config").mkdir(parents=True)
    config = {
        "benchmarks": ["geneturing"],
        "models": {"codex": {"backend": "replay", "recording": "genegpt-2023"}},
        "runs": [{"model": "codex", "method": "genegpt-slim", "tasks": ["Gene alias"]}],
    }
    (project / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    snakefile = MODULE_SNAKEFILE.format(workflow=checkout / "workflow" / "Snakefile")
    (project / "Snakefile").write_text(snakefile)
    env = {**os.environ, "HELIXBENCH_MIRROR": str(mirror), "HELIXBENCH_TEST_MARKER": str(marker)}
    target = "resources/upstream/raw.githubusercontent.com/ncbi/GeneGPT/"
    target += "0a2a327a507be49e660597769cc53431abd6613a/data/geneturing.json"
    command = [sys.executable, "-m", "snakemake", "--cores", "1"]

    def snakemake(*args):
        return subprocess.run(
            [*command, *args], cwd=project, env=env, capture_output=True, text=True
        )

    done = snakemake(target)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (project / target).is_file()  # written in the user's project, not the checkout
    imported = set(marker.read_text().split())
    assert imported == {str(init.resolve())}  # the rules' and the fetch job's import
    assert len(marker.read_text().split()) >= 2
    # A config mistake in the user's file is named there, in one line.
    config["modles"] = config.pop("models")
    (project / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    bad = snakemake("-n")
    message = "config/config.yaml: modles: unknown key; did you mean 'models'?"
    assert message in bad.stdout + bad.stderr
