# Config validation and the helpers that turn the config into targets.
import hashlib
import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake_interface_executor_plugins.settings import ExecMode
from snakemake.sourcecache import LocalSourceFile
from snakemake.utils import validate


def local_workflow_dir():
    """This workflow's directory (workflow/) on this machine: in a clone, or where the
    workflow is used as a module from a local path (workflow.basedir is then the
    user's project, so the rule file's own directory is asked). None for a module
    loaded from a remote (GitHub)."""
    here = workflow.current_basedir  # workflow/rules, also inside a module
    if not isinstance(here, LocalSourceFile):
        return None
    return Path(here.get_path_or_uri(secret_free=True)).resolve().parent


# Jobs run the helixbench package beside this workflow (workflow/../src); a module
# loaded from a remote has none, and uses the helixbench installed in its environment.
WORKFLOW_DIR = local_workflow_dir()
SRC_DIR = WORKFLOW_DIR.parent / "src" if WORKFLOW_DIR else None
if SRC_DIR is not None and not (SRC_DIR / "helixbench" / "__init__.py").is_file():
    SRC_DIR = None
if SRC_DIR is not None:
    sys.path.insert(0, str(SRC_DIR))

from helixbench import paths
from helixbench.benchmarks import question_files
from helixbench.datasets.fetch import (
    MIRROR_ENV,
    FetchError,
    pin_mirror_env,
    resolve_mirror,
)
from helixbench.models.gguf import converted_name, weights_spec
from helixbench.config import ConfigError, build_plan
from helixbench.config.schema import check_config, naming_the_file
from helixbench.config.checks import run_problems, scoring_problems
from helixbench.paths import upstream_path
from helixbench.tools import SETTINGS_ENV as TOOLS_SETTINGS_ENV
from helixbench.models import SERVING_ENV
from helixbench.rechecks import recheck_only_when_held
from helixbench.tools.executor import ToolSettings
from helixbench.datasets.upstream import manifest
from helixbench.retrieval import corpus_files, user_documents
from helixbench.scoring.background import go_files
from helixbench.scoring.batch import batch_jobs, batch_size
from helixbench.scoring.rag_assessment import applies as ragas_applies
from helixbench.methods.originals import ORIGINALS

UPSTREAM_MANIFEST = manifest()

# Whether this is a dry run (-n): what the Snakefile is read for decides it only later,
# so the command line says it.
DRY_RUN = workflow.dryrun or any(
    arg in ("--dry-run", "--dryrun", "--just-print")
    or re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", arg)
    for arg in sys.argv[1:]
)

# The config files in the order they were merged: Snakemake lists the Snakefile's
# own `configfile:` last, though the --configfile files are merged over it.
CONFIG_FILES = [*workflow.configfiles[-1:], *workflow.configfiles[:-1]]

# Our check first: one line naming the key (Snakemake's own prints the whole schema);
# then Snakemake's, which fills in the schema's defaults.
try:
    if WORKFLOW_DIR:
        check_config(config, CONFIG_FILES, WORKFLOW_DIR / "schemas/config.schema.yaml")
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")
validate(config, schema="../schemas/config.schema.yaml")

try:
    pin_mirror_env()  # the jobs, wherever they run, find the mirror the user named
    MIRROR = resolve_mirror(config.get("mirror"))
    if MIRROR is not None:  # (config key `mirror` too: the jobs read it from here)
        os.environ[MIRROR_ENV] = str(MIRROR)
    PLAN = build_plan(config, MIRROR)
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {naming_the_file(str(exc), CONFIG_FILES)}")
except FetchError as exc:
    raise WorkflowError(f"invalid config: {exc}")
if not DRY_RUN and workflow.exec_mode == ExecMode.DEFAULT:
    # What `helixbench plan --check` checks, for the runs that have questions left: a
    # missing key or a server that does not answer is one line now, not every job's
    # failure after the environments are built.
    PENDING = [r for r in PLAN.runs if not all(map(os.path.exists, r.shard_paths()))]
    PROBLEMS = run_problems(PLAN, MIRROR, PENDING) if PENDING else []
    PROBLEMS += scoring_problems(PLAN, probe=False)  # (a judge's key, before any job)
    if PROBLEMS:
        raise WorkflowError(
            "helixbench: the runs cannot start:\n"
            + "\n".join(f"  {where}: {problem}" for where, problem in PROBLEMS)
        )
if not PLAN.tasks:
    raise WorkflowError(
        "nothing to run: every run of the config was left out; "
        + "; ".join(note["message"] for note in PLAN.notes)
    )


def per_run(value_of):
    """A run job's resource: the value itself where every planned run has the same
    (Snakemake evaluates a function once per job: with thousands of jobs that adds
    up), else a function of the job's run."""
    values = {value_of(run) for run in PLAN.runs}
    if len(values) == 1:
        return values.pop()
    return lambda wildcards: value_of(get_run(wildcards))


# One global resource per model server caps the jobs calling it at once, across a
# cluster too; --resources endpoint_<host>=N on the command line overrides it.
RUN_RESOURCES = {
    # Jobs that may reach NCBI (tools live or refresh) take one slot of `ncbi`.
    "ncbi": per_run(lambda run: int(run.tools_mode in ("live", "refresh"))),
    # GPUs of a local model (models.<name>.gpus); the SLURM profile requests them.
    "gpu": per_run(lambda run: run.gpus),
}
for name, limit in PLAN.endpoints().items():
    if name not in workflow.global_resources:
        workflow.register_resource(name, limit)
    RUN_RESOURCES[name] = per_run(lambda run, name=name: int(run.endpoint == name))
RUN_THREADS = per_run(lambda run: run.threads)

for warning in PLAN.console_warnings():
    logger.warning(warning)


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    method=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    variant=r"[0-9a-f]{8}",
    shard=r"\d+",
    shards=r"\d+",
    env=r"[A-Za-z0-9][A-Za-z0-9._-]*",


def set_job_environment():
    """Jobs run this checkout's code (src/), with Snakemake's own Python unless conda is
    used, and get the config's tools and serving settings (not params: tuning them
    reruns nothing)."""
    env = f"export PYTHONPATH={shlex.quote(str(SRC_DIR))}; " if SRC_DIR else ""
    tools = json.dumps(PLAN.tools, sort_keys=True)
    # The prefix is formatted like a shell command: double the JSON's braces.
    tools = shlex.quote(tools).replace("{", "{{").replace("}", "}}")
    env += f"export {TOOLS_SETTINGS_ENV}={tools}; "
    serving = json.dumps(PLAN.serving(), sort_keys=True)  # the same for `concurrency`
    serving = shlex.quote(serving).replace("{", "{{").replace("}", "}}")
    env += f"export {SERVING_ENV}={serving}; "
    if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
        bin_dir = shlex.quote(os.path.dirname(sys.executable))
        env += f'export PATH={bin_dir}:"$PATH"; '
    shell.prefix(f"set -euo pipefail; {env}")


set_job_environment()

# Each rule's software under --sdm conda (workflow/envs/): fetching and the report
# need no PyTorch; jobs that run a local model or embed (local, score) do.
ENVS = {
    name: f"../envs/{name}.yaml"
    for name in ("fetch", "run", "local", "score", "report")
}


# Under --sdm conda a seed system's environment is its file's, built by Snakemake.
ORIGINAL_ENV_IN_PLACE = (
    "--in-place"
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    else ""
)


# Environments of their own: the seed systems' (originals/), the peers' (peers/:
# Inspect's, for the exports and for LAB-Bench's wording and cross-check) and the code
# tools' (tools/).
ISOLATED_ENV_DIRS = ("originals", "peers", "tools")


def _isolated_env_dir(env):
    if WORKFLOW_DIR is None:
        return "originals"
    for folder in ISOLATED_ENV_DIRS:
        if (WORKFLOW_DIR / "envs" / folder / f"{env}.yaml").is_file():
            return folder
    raise WorkflowError(
        f"no environment file {env}.yaml in workflow/envs/originals, peers or tools"
    )


def get_original_env_file(wildcards):
    if WORKFLOW_DIR is None:
        raise WorkflowError(
            "an original's environment needs the workflow's local envs/"
        )
    folder = _isolated_env_dir(wildcards.env)
    return str(WORKFLOW_DIR / "envs" / folder / f"{wildcards.env}.yaml")


def get_prepare_original_inputs(wildcards):
    """An original's environment and the upstream files its runner reads."""
    system = ORIGINALS[wildcards.original]
    files = [upstream_path(f) for f in system.upstream_files()]
    return {"env": system.env_marker, "files": files}


def get_original_env_conda(wildcards):
    return f"../envs/{_isolated_env_dir(wildcards.env)}/{wildcards.env}.yaml"


EXPORTS = config.get("report", {}).get("exports", [])
INSPECT_ENV = paths.PEER_ENV
RAGAS_ENV = paths.ORIGINAL_ENV.format(env="ragas")


def get_export_inputs(wildcards):
    run = get_run(wildcards)
    inputs = {
        "questions": paths.QUESTIONS,
        # Its score batch: the run's scores and summary (ancient: the batch's other
        # runs rescored leave this export as it is; its shards and scoring say when).
        "scored": ancient(batch_path(run)),
        "shards": run.shard_paths(),
    }
    if "inspect" in EXPORTS:
        inputs["inspect_env"] = INSPECT_ENV
    return inputs


def get_inspect_env_arg(wildcards):
    return f"--inspect-env {INSPECT_ENV}" if "inspect" in EXPORTS else ""


def get_run_env(wildcards):
    return ENVS["local" if get_run(wildcards).needs_local_stack else "run"]


def verbatim(value):
    """A param passed as it is. Snakemake reads braces in a plain string param as
    wildcards, and config values may hold braces (an imported source's "{task}")."""

    def param(wildcards):
        return value

    return param


def get_config_json():
    return json.dumps(config, sort_keys=True)


def get_config_sources():
    """The config files this run merged, in order (config/config.yaml first, as
    paths from the working directory where they lie under it), and whether
    --config overrode keys: what the report says it was built from."""
    files = []
    for path in CONFIG_FILES:
        path = Path(path).absolute()
        inside = path.is_relative_to(Path.cwd())
        files.append(str(path.relative_to(Path.cwd()) if inside else path))
    if workflow.config_settings.config:
        files.append("--config " + ",".join(sorted(workflow.config_settings.config)))
    return json.dumps(list(dict.fromkeys(files)))


# Each config's report in a folder of its own (results/reports/<key>), and
# results/report a link to the last one run: switching configs reruns no report, and
# a config run again finds its report as it left it.
REPORT_OUT = (
    f"{paths.REPORTS_DIR}/"
    + hashlib.sha256((get_config_json() + get_config_sources()).encode()).hexdigest()[
        :12
    ]
)
if (
    not DRY_RUN
    and workflow.exec_mode == ExecMode.DEFAULT
    and Path(REPORT_OUT, "index.html").is_file()
):
    paths.show_report(REPORT_OUT)  # (a config run again, with nothing left to do)


def print_report_summary():
    """After a successful run that wrote the report: where it is and who leads (the
    report job wrote it)."""
    ending = Path(paths.REPORT_CONSOLE_SUMMARY)
    if ending.is_file() and Path(REPORT_OUT, "index.html").is_file():
        print(ending.read_text(encoding="utf-8"), end="")


def get_final_output():
    return [f"{REPORT_OUT}/{name}" for name in paths.REPORT_FILES]


def get_report_outputs():
    """The report's files (helixbench.paths.REPORT, and the CSV copy of the
    per-question table where the config asks); those with a caption go into
    Snakemake's own report under their category."""
    # A number of files that does not grow with the runs: Snakemake checks every input
    # against every output as a job ends, so a page per run declared here made the
    # report's ending quadratic in the runs. The runs' pages and exports under runs/
    # and exports/ are written all the same; a run added changes the config and so
    # the report's folder (REPORT_OUT), which reruns the report.
    outputs = []
    if config.get("report", {}).get("question_scores_csv"):
        outputs.append(f"{REPORT_OUT}/question_scores.csv")
    for file in paths.REPORT:
        path = f"{REPORT_OUT}/{file.name}"
        if file.caption:
            caption = f"../report/{file.caption}.rst"
            path = report(path, caption=caption, category=file.category)
        outputs.append(path)
    return outputs


def get_pin_args(wildcards):
    """A file the config pins (an imported source's file outside the manifest): its URL
    and sha256 for the fetch command; nothing for a file of the manifest."""
    file = PLAN.pinned(wildcards.relpath)
    if file is None or file.relpath in UPSTREAM_MANIFEST:
        return ""
    return f"--url {shlex.quote(file.url)} --sha256 {file.sha256}"


def get_benchmark_files():
    return [upstream_path(f) for f in question_files()]


def get_run(wildcards):
    return PLAN.find(wildcards.model, wildcards.method, wildcards.get("variant"))


def get_run_spec(wildcards):
    return json.dumps(get_run(wildcards).spec(), sort_keys=True)


def get_run_inputs(wildcards):
    run = get_run(wildcards)
    return {
        "questions": paths.QUESTIONS,
        "recordings": run.recording_paths,
        "data": run.data_paths,
        "snapshots": run.snapshot_paths,
        "seeds": list(run.seed_markers),
        "indexes": run.index_markers,
        "model_dir": run.model_dir or [],
    }


def get_index_settings(wildcards):
    return json.dumps(PLAN.indexes[wildcards.key], sort_keys=True)


def get_index_inputs(wildcards):
    """The corpus an index is built from: the pinned files, or the user's documents."""
    settings = PLAN.indexes[wildcards.key]
    files = [upstream_path(f) for f in corpus_files(settings["corpus"])]
    return files or [str(p) for p in user_documents(settings["corpus"])]


def get_model_dir_arg(wildcards, input):
    return f"--model-dir {shlex.quote(input.model_dir)}" if input.model_dir else ""


def get_weights_spec(wildcards):
    """What of a model's config decides the GGUF file converted into ``weights``."""
    for spec in config["models"].values():
        if (
            spec.get("backend") == "transformers"
            and converted_name(spec) == wildcards.weights
        ):
            return json.dumps(weights_spec(spec), sort_keys=True)
    raise WorkflowError(f"no model of the config loads {wildcards.weights}")


def get_seed_runs(wildcards):
    return PLAN.seed(wildcards.recording, wildcards.files)


def get_seed_files(wildcards):
    return [upstream_path(r.file) for r in get_seed_runs(wildcards)]


SCORE_BATCHES = PLAN.score_batches(
    batch_size(config.get("score_batch", "auto"), len(PLAN.runs))
)
BATCH_OF = {run.label: key for key, runs in SCORE_BATCHES.items() for run in runs}


def batch_path(run):
    """The record of the score job that scores ``run`` (its files come with it)."""
    return paths.SCORE_BATCH.format(batch=BATCH_OF[run.label])


def get_batch(wildcards):
    try:
        return SCORE_BATCHES[wildcards.batch]
    except KeyError:
        raise WorkflowError(f"no score batch {wildcards.batch} in this config")


def get_batch_jobs(wildcards):
    return batch_jobs(PLAN, get_batch(wildcards))


def get_batch_shards(wildcards):
    return [path for run in get_batch(wildcards) for path in run.shard_paths()]


def get_batch_background(wildcards):
    goes = any(PLAN.ranks_against_go(run) for run in get_batch(wildcards))
    return paths.PERCENTILE_BACKGROUND if goes else []


def get_batch_ragas_env(wildcards):
    """RAGAs' environment, for a batch with a run RAGAs scores (scoring.ragas)."""
    runs = get_batch(wildcards)
    return RAGAS_ENV if any(ragas_applies(r.spec(), PLAN.scoring) for r in runs) else []


def get_model_cache():
    return config.get("model_cache", paths.MODEL_CACHE)


def get_tools_cache():
    return PLAN.tools.get("cache", ToolSettings.cache)


def get_live_snapshot_mode(wildcards):
    try:
        return PLAN.live_snapshots[wildcards.name]
    except KeyError:
        raise WorkflowError(
            f"no snapshot {wildcards.name!r} under 'snapshots' in the config"
        )


def get_live_snapshot_seeds(wildcards):
    """A snapshot taken from the cache (tools offline or live) waits for its seeding."""
    mode = get_live_snapshot_mode(wildcards)
    return list(PLAN.seeds) if mode in ("offline", "live") else []


def get_run_shards(wildcards):
    return get_run(wildcards).shard_paths()


def get_recorded_run(wildcards):
    return PLAN.recorded_run(wildcards.recording, wildcards.run_dir, wildcards.task)


def get_recorded_mask(wildcards):
    return get_recorded_run(wildcards).mask


def get_recorded_url(wildcards):
    return get_recorded_run(wildcards).file.url


def get_recording_file(wildcards):
    return upstream_path(get_recorded_run(wildcards).file)


def get_report_inputs():
    """Everything the report reads: the runs' summaries and per-question tables, and
    for provenance the snapshots and upstream files."""
    # (each run's summary, table and questions come with its score batch's record)
    files = [paths.QUESTIONS, *(batch_path(run) for run in PLAN.runs)]
    files += [path for run in PLAN.runs for path in run.snapshot_paths]
    files += [seed for run in PLAN.runs for seed in run.seed_markers]
    if EXPORTS:
        files += [paths.RUN_EXPORTS.format(**run.wildcards) for run in PLAN.runs]
    files += [upstream_path(f) for f in PLAN.upstream_files()]
    return list(dict.fromkeys(files))
