"""Turn a (schema-validated) config into the runs the workflow executes.

A run is a (model, method) pair covering one or more benchmark tasks (a
:class:`RunTask` each). The run is the unit of the workflow's jobs: its
questions, across all its tasks, are split into ``shards`` run jobs and scored
by one score job, so a sweep of thousands of (model, method, task) triples stays
a job graph Snakemake builds in seconds. A replay run covers exactly the tasks upstream
recorded for its mask; the rest are skipped with a note, and a recorded task the
mirror lacks is skipped with a warning, so the report says what is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from . import paths
from .benchmarks import GENESET_FILES, is_sample, question_files, slugify, tasks_of
from .digests import sha256_json
from .errors import ConfigError
from .fetch import available
from .genegpt_format import check_mask
from .imports import SourceError, claimed_files, resolve_source, task_file
from .methods import GENESET_KINDS
from .methods.genegpt import PRESETS
from .recordings import RECORDINGS, RecordedRun, recorded_runs, snapshot_run
from .scoring import DEFAULT_SCORING, MODEL_SCORERS
from .tools.executor import ToolSettings
from .upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, UpstreamFile, lookup

ALL_CORES = 1024  # Snakemake caps a job's threads at --cores
MASK_METHOD = re.compile(r"^genegpt-([01]{6})$")


def resolve_method(name: str, methods: dict) -> dict:
    """A method's spec: from config, else a preset, else ``genegpt-<mask>`` for any mask."""
    if name in methods:
        spec = dict(methods[name])
    elif name in PRESETS:
        spec = {"kind": "genegpt", "mask": PRESETS[name]}
    elif name == "imported":  # a published system's outputs (models with backend imported)
        spec = {"kind": "imported"}
    elif name in GENESET_KINDS:  # gene-set methods with their default settings
        spec = {"kind": name}
    elif match := MASK_METHOD.match(name):
        spec = {"kind": "genegpt", "mask": match.group(1)}
    else:
        raise KeyError(name)
    if spec.get("kind") == "genegpt":
        check_mask(spec.get("mask"))
    return spec


@dataclass(frozen=True)
class RunTask:
    model: str
    method: str
    benchmark: str
    task: str
    shards: int
    model_spec: dict = field(hash=False)
    method_spec: dict = field(hash=False)
    recorded: RecordedRun | None = None
    # Every mirrored file of the recorded run (its mask's tasks): the loop variant the
    # run was recorded with is read off them together (recordings.infer_loop).
    recorded_group: tuple[RecordedRun, ...] = field(default=(), hash=False)
    tools: dict = field(default_factory=dict, hash=False)  # {"mode": ...}
    snapshot_path: str | None = None  # the demonstration snapshot the method's header uses
    # A replayed run's header embeds its own snapshot: the run job reads it off the
    # recording (and checks it) instead of a snapshot file.
    snapshot_from_recording: bool = False
    seed_markers: tuple[str, ...] = ()  # tool-cache seeds the run's tool calls may read
    sample: int | None = None  # questions per task (a fixed pseudo-random choice); None: all
    imported: UpstreamFile | None = None  # an imported source's file holding this task
    imported_format: str | None = None
    gsea_terms: UpstreamFile | None = None  # recorded top enrichment terms (gsea-top1)

    @property
    def imported_path(self) -> str | None:
        return upstream_path(self.imported) if self.imported else None

    @property
    def task_slug(self) -> str:
        return slugify(self.task)

    @property
    def recording_path(self) -> str | None:
        return upstream_path(self.recorded.file) if self.recorded else None

    @property
    def tools_mode(self) -> str:
        return self.tools["mode"]

    def spec(self) -> dict:
        """What a run job needs to know of this task, as JSON-able data."""
        return {
            "benchmark": self.benchmark,
            "task": self.task,
            "recording": self.recording_path,
            "recording_url": self.recorded.file.url if self.recorded else None,
            "recording_sha256": self.recorded.file.sha256 if self.recorded else None,
            "recording_group": [upstream_path(r.file) for r in self.recorded_group],
            "snapshot": self.snapshot_path,
            "snapshot_from_recording": self.snapshot_from_recording,
            "imported": self.imported_path,
            "imported_url": self.imported.url if self.imported else None,
            "imported_sha256": self.imported.sha256 if self.imported else None,
            "imported_format": self.imported_format,
            "gsea_terms": upstream_path(self.gsea_terms) if self.gsea_terms else None,
        }


@dataclass(frozen=True)
class Run:
    """A (model, method) pair and the tasks it covers: one score job and ``shards`` run jobs.

    Its settings are those of every one of its tasks (the plan gives them the same).
    """

    tasks: tuple[RunTask, ...]

    @property
    def first(self) -> RunTask:
        return self.tasks[0]

    @property
    def model(self) -> str:
        return self.first.model

    @property
    def method(self) -> str:
        return self.first.method

    @property
    def shards(self) -> int:
        return self.first.shards

    @property
    def model_spec(self) -> dict:
        return self.first.model_spec

    @property
    def label(self) -> str:
        return f"{self.model} / {self.method}"

    @property
    def wildcards(self) -> dict:
        return {"model": self.model, "method": self.method}

    def shard_paths(self) -> list[str]:
        return [
            paths.RUN_SHARD.format(**self.wildcards, shard=i, shards=self.shards)
            for i in range(self.shards)
        ]

    @property
    def score_path(self) -> str:
        return paths.RUN_SCORES.format(**self.wildcards)

    @property
    def recording_paths(self) -> list[str]:
        paths_ = [t.recording_path for t in self.tasks if t.recording_path]
        paths_ += [upstream_path(r.file) for t in self.tasks for r in t.recorded_group]
        return list(dict.fromkeys(paths_))

    @property
    def data_paths(self) -> list[str]:
        """Upstream files a run job reads besides recordings: imported outputs, recorded
        enrichment terms."""
        paths_ = [t.imported_path for t in self.tasks if t.imported]
        paths_ += [upstream_path(t.gsea_terms) for t in self.tasks if t.gsea_terms]
        return list(dict.fromkeys(paths_))

    @property
    def imported(self) -> bool:
        return self.model_spec["backend"] == "imported"

    @property
    def snapshot_paths(self) -> list[str]:
        return list(dict.fromkeys(t.snapshot_path for t in self.tasks if t.snapshot_path))

    @property
    def seed_markers(self) -> tuple[str, ...]:
        return self.first.seed_markers

    @property
    def tools_mode(self) -> str:
        return self.first.tools_mode

    @property
    def endpoint(self) -> str | None:
        """The global resource that caps concurrent calls to this run's model server."""
        return endpoint_resource(self.model_spec)

    @property
    def model_dir(self) -> str | None:
        """The converted local model the run loads (a GGUF file of the transformers
        backend: one conversion per file, whichever models load it)."""
        if self.model_spec["backend"] == "transformers":
            from .models.local import converted_name

            name = converted_name(self.model_spec)
            return paths.LOCAL_MODEL.format(weights=name) if name else None
        return None

    @property
    def gpus(self) -> int:
        """GPUs a local model job asks the cluster for (the profile passes it to SLURM)."""
        if self.model_spec["backend"] == "transformers":
            return int(self.model_spec.get("gpus", 0))
        return 0

    @property
    def threads(self) -> int:
        if self.model_spec["backend"] == "transformers":
            # A local model job takes every core Snakemake has (capped to --cores), so
            # such jobs run one at a time unless the config sets fewer threads.
            return int(self.model_spec.get("threads", ALL_CORES))
        return 1

    def spec(self) -> dict:
        """What a run or score job needs to know, as JSON-able data."""
        return {
            "model": self.model,
            "method": self.method,
            "shards": self.shards,
            "model_spec": self.model_spec,
            "method_spec": self.first.method_spec,
            "tools": self.first.tools,
            "sample": self.first.sample,
            "tasks": [t.spec() for t in self.tasks],
        }


@dataclass
class Plan:
    tasks: list[RunTask]
    notes: list[dict]  # {"level": "note" | "warning", "model", "method", "benchmark", "message"}
    snapshot_runs: list[RecordedRun] = field(default_factory=list)  # recorded snapshots used
    live_snapshots: dict = field(default_factory=dict)  # name -> tools mode to take it in
    seeds: dict = field(default_factory=dict)  # seed marker path -> (recording, [RecordedRun])
    tools: dict = field(default_factory=dict)  # the config's tools settings (mode unresolved)
    scoring: dict = field(default_factory=dict)  # the scoring section, defaults filled in
    sources: dict = field(default_factory=dict)  # imported model -> its resolved source
    claims: dict = field(default_factory=dict)  # imported model -> {benchmark: claim file}

    def __post_init__(self):
        grouped: dict[tuple[str, str], list[RunTask]] = {}
        for task in self.tasks:
            grouped.setdefault((task.model, task.method), []).append(task)
        self.runs = [Run(tuple(tasks)) for tasks in grouped.values()]
        self._pinned = None
        # Snakemake asks for a job's run once per input function: keep lookups O(1).
        self._by_wildcards = {(r.model, r.method): r for r in self.runs}
        self._by_recording = {
            (r.recording, r.run_dir, slugify(r.task)): r
            for r in [t.recorded for t in self.tasks if t.recorded] + self.snapshot_runs
        }

    def find(self, model: str, method: str) -> Run:
        try:
            return self._by_wildcards[(model, method)]
        except KeyError:
            raise KeyError(f"no planned run {model}/{method}") from None

    def recorded_run(self, recording: str, run_dir: str, task_slug: str) -> RecordedRun:
        try:
            return self._by_recording[(recording, run_dir, task_slug)]
        except KeyError:
            raise KeyError(f"no planned recorded run {recording}/{run_dir}/{task_slug}") from None

    def upstream_files(self) -> list[UpstreamFile]:
        files = question_files()
        files += [t.recorded.file for t in self.tasks if t.recorded is not None]
        files += [r.file for r in self.snapshot_runs]
        files += [t.imported for t in self.tasks if t.imported is not None]
        files += [t.gsea_terms for t in self.tasks if t.gsea_terms is not None]
        files += [f for claims in self.claims.values() for f in claims.values()]
        return list(dict.fromkeys(files))

    def pinned(self, relpath: str) -> UpstreamFile | None:
        """The planned upstream file at ``relpath`` (pinned by the manifest or the config)."""
        if self._pinned is None:  # asked once per fetch job: index the files once
            self._pinned = {f.relpath: f for f in self.upstream_files()}
        return self._pinned.get(relpath)

    def endpoints(self) -> dict[str, int]:
        """Resource name -> concurrent jobs allowed, for every model server in the plan."""
        limits: dict[str, int] = {}
        for run in self.runs:
            if run.endpoint:
                limit = int(run.model_spec.get("concurrency", 4))
                limits[run.endpoint] = min(limits.get(run.endpoint, limit), limit)
        return limits

    def seed(self, recording: str) -> list[RecordedRun]:
        try:
            return self.seeds[paths.TOOL_CACHE_SEED.format(recording=recording)]
        except KeyError:
            raise KeyError(f"no planned tool-cache seed {recording}") from None


def upstream_path(file: UpstreamFile) -> str:
    return f"{paths.UPSTREAM_DIR}/{file.relpath}"


def build_plan(config: dict, mirror: Path | None) -> Plan:
    models, methods = config.get("models", {}), config.get("methods", {})
    tools_config = dict(config.get("tools", {}))
    seed_config = tools_config.pop("seed", [])
    try:
        ToolSettings.from_config({**tools_config, "mode": "offline"})
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    live_snapshots = {
        name: spec.get("tools", "refresh") for name, spec in config.get("snapshots", {}).items()
    }
    seeds = _seeds(seed_config, mirror)
    tasks, notes, snapshot_runs = [], [], []
    sources = {}
    seen = set()
    for where, run in expand_runs(config.get("runs", [])):
        if run["model"] not in models:
            raise ConfigError(
                f"{where}.model: unknown model {run['model']!r}; defined: {', '.join(models)}"
            )
        try:
            method_spec = resolve_method(run["method"], methods)
        except KeyError:
            raise ConfigError(
                f"{where}.method: unknown method {run['method']!r}; define it under 'methods', "
                f"or use a preset ({', '.join(PRESETS)}) or genegpt-<six-digit mask>"
            ) from None
        except ValueError as exc:
            raise ConfigError(f"methods.{run['method']}.mask: {exc}") from None
        if (run["model"], run["method"]) in seen:
            raise ConfigError(f"{where}: run {run['model']} x {run['method']} is listed twice")
        seen.add((run["model"], run["method"]))
        model_spec = models[run["model"]]
        # Replayed and imported runs call no tool: their replies are recorded.
        replay = model_spec["backend"] in ("replay", "imported")
        mode = run.get("tools") or ("replay" if replay else tools_config.get("mode", "offline"))
        benchmarks = run.get("benchmarks", config.get("benchmarks", []))
        _check_pairing(where, run, benchmarks, model_spec, method_spec)
        if model_spec["backend"] == "imported" and run["model"] not in sources:
            try:
                sources[run["model"]] = resolve_source(
                    model_spec["source"], f"models.{run['model']}.source"
                )
            except SourceError as exc:
                raise ConfigError(str(exc)) from None
        tools = {"mode": mode}  # the rest of ``tools`` shapes no result: jobs get it apart
        _check_task_names(where, run.get("tasks") or [], benchmarks)
        shards = run.get("shards", config.get("shards", 1))
        for benchmark in benchmarks:
            new, new_notes = _run_tasks(
                run, model_spec, method_spec, benchmark, shards, mirror, sources
            )
            if run.get("tasks"):  # a run restricted to some tasks (by name or slug)
                wanted = set(run["tasks"])
                new = [t for t in new if t.task in wanted or t.task_slug in wanted]
            else:  # toy samples of a dataset run only when named
                new = [t for t in new if not is_sample(t.task)]
            if method_spec["kind"] == "gsea-top1":
                new = [replace(t, gsea_terms=RECORDED_GSEA.get(t.task)) for t in new]
            for task in new:
                snapshot = _snapshot_path(task, run, live_snapshots, snapshot_runs, mirror)
                own = task.method_spec.get("kind") == "genegpt" and snapshot is None
                markers = tuple(seeds) if mode != "replay" else ()
                tasks.append(
                    replace(
                        task,
                        tools=tools,
                        snapshot_path=snapshot,
                        snapshot_from_recording=own,
                        seed_markers=markers,
                        sample=run.get("sample"),
                    )
                )
            notes += new_notes
    scoring = resolve_scoring(config)
    for model in config.get("prices", {}):
        if model not in models:
            raise ConfigError(
                f"prices.{model}: unknown model {model!r}; defined: {', '.join(models)}"
            )
    # The files stating a source's own score (the report quotes them where mirrored).
    claims = {
        model: {b: f for b, f in claimed_files(source).items() if available(f.url, mirror)}
        for model, source in sources.items()
    }
    return Plan(
        tasks, notes, snapshot_runs, live_snapshots, seeds, tools_config, scoring, sources, claims
    )


# GeneAgent's recorded g:Profiler top terms, for the sets of the MSigDB dataset.
_TOP1 = lookup(GENEAGENT_REPO, "GSEATerms/MsigDB.EnrichTerms.top1.json", GENEAGENT_COMMIT)
RECORDED_GSEA = {task: _TOP1 for task in GENESET_FILES if task.startswith("MSigDB")}


def _check_pairing(where: str, run: dict, benchmarks, model_spec: dict, method_spec: dict):
    """Which methods run on which benchmarks, and which need which backend."""
    kind, backend = method_spec["kind"], model_spec["backend"]
    benchmarks = set(benchmarks)
    label = f"{run['model']} x {run['method']}"
    if kind in GENESET_KINDS and benchmarks - {"genesets"}:
        raise ConfigError(f"{where}: {kind} names gene sets: set benchmarks: [genesets] ({label})")
    if kind not in GENESET_KINDS and "genesets" in benchmarks:
        raise ConfigError(f"{where}: benchmark genesets takes closed-book, geneagent or gsea-top1")
    if (backend == "enrichment") != (kind == "gsea-top1"):
        raise ConfigError(
            f"{where}: gsea-top1 runs with a model of backend enrichment, and only it ({label})"
        )
    if backend == "replay" and kind != "genegpt":
        raise ConfigError(f"{where}: a replayed recording needs a genegpt method ({label})")
    if (backend == "imported") != (kind == "imported"):
        raise ConfigError(
            f"{where}: an imported model takes the method 'imported' (a method of kind "
            f"imported), and only it does ({label})"
        )


def _check_task_names(where: str, names: list[str], benchmarks: list[str]) -> None:
    """Every task a run names (by name or slug) is a task of one of its benchmarks."""
    known = {
        name: benchmark
        for benchmark in benchmarks
        for task in tasks_of(benchmark)
        for name in (task, slugify(task))
    }
    for name in names:
        if name not in known:
            listed = "; ".join(f"{b}: {', '.join(tasks_of(b))}" for b in benchmarks)
            raise ConfigError(f"{where}.tasks: unknown task {name!r}; the tasks are ({listed})")


def resolve_scoring(config: dict) -> dict:
    """The config's ``scoring`` over the defaults (per task: the config's list wins)."""
    given = config.get("scoring", {})
    scoring = {**DEFAULT_SCORING, **given}
    scoring["tasks"] = {**DEFAULT_SCORING["tasks"], **given.get("tasks", {})}
    for scorer, key in MODEL_SCORERS.items():
        used = scorer in scoring["default"] or any(
            scorer in names for names in scoring["tasks"].values()
        )
        model = scoring.get(key, {}).get("model")
        if used and not model:
            raise ConfigError(f"scoring: the {scorer!r} scorer needs scoring.{key}.model")
        if model and model not in config.get("models", {}):
            raise ConfigError(f"scoring.{key}.model: unknown model {model!r}")
    return scoring


def endpoint_resource(model_spec: dict) -> str | None:
    if model_spec["backend"] != "openai":
        return None
    from .models.openai_api import DEFAULT_BASE_URL

    netloc = urlsplit(model_spec.get("base_url") or DEFAULT_BASE_URL).netloc
    return "endpoint_" + re.sub(r"[^A-Za-z0-9]+", "_", netloc).strip("_").lower()


def expand_runs(runs: list[dict]) -> list[tuple[str, dict]]:
    """``runs`` with sweeps expanded: an entry may list ``models`` and/or ``methods``,
    meaning every combination; returns ``(where in config, run)`` pairs."""
    expanded = []
    for i, run in enumerate(runs):
        models = run.get("models") or [run.get("model")]
        methods = run.get("methods") or [run.get("method")]
        rest = {k: v for k, v in run.items() if k not in ("model", "models", "method", "methods")}
        for model in models:
            for method in methods:
                expanded.append((f"runs[{i}]", {**rest, "model": model, "method": method}))
    return expanded


def _seeds(entries: list, mirror: Path | None) -> dict:
    """``tools.seed``: seed marker -> recorded runs whose tool replies seed the cache."""
    seeds = {}
    for i, entry in enumerate(entries):
        entry = {"recording": entry} if isinstance(entry, str) else entry
        recording = entry["recording"]
        if recording not in RECORDINGS:
            raise ConfigError(
                f"tools.seed[{i}]: unknown recording {recording!r}; known: {', '.join(RECORDINGS)}"
            )
        masks = entry.get("masks") or [None]
        runs = [
            r
            for benchmark in RECORDINGS[recording]["dirs"]
            for mask in masks
            for r in recorded_runs(recording, benchmark, mask)
            if available(r.file.url, mirror)
        ]
        seeds[paths.TOOL_CACHE_SEED.format(recording=recording)] = runs
    return seeds


def _snapshot_path(task, run, live_snapshots, snapshot_runs, mirror) -> str | None:
    """Where the demonstration snapshot of ``task``'s method lies (None: the method needs
    none, or reads it off its recording)."""
    if task.method_spec.get("kind") != "genegpt":
        return None
    default = "recorded" if task.recorded else "genegpt-2023"
    name = task.method_spec.get("snapshot", default)
    where = f"methods.{run['method']}.snapshot"
    if name == "recorded":
        if task.recorded is None:
            raise ConfigError(f"{where}: 'recorded' needs a replayed run; name a snapshot")
        return None  # read off the recording by the run job
    if name in live_snapshots:
        return paths.LIVE_SNAPSHOT.format(name=name)
    if name not in RECORDINGS:
        raise ConfigError(
            f"{where}: unknown snapshot {name!r}; use 'recorded', a recording "
            f"({', '.join(RECORDINGS)}) or a name under 'snapshots'"
        )
    recorded = snapshot_run(name)
    if recorded not in snapshot_runs and not available(recorded.file.url, mirror):
        raise ConfigError(f"{where}: snapshot {name} needs {recorded.file.url}; not mirrored")
    if recorded not in snapshot_runs:
        snapshot_runs.append(recorded)
    return paths.RECORDED_SNAPSHOT.format(
        recording=recorded.recording, run_dir=recorded.run_dir, task=slugify(recorded.task)
    )


def _run_tasks(run, model_spec, method_spec, benchmark, shards, mirror, sources):
    base = {"model": run["model"], "method": run["method"], "benchmark": benchmark}
    if model_spec["backend"] == "imported":
        return _imported_tasks(run, model_spec, method_spec, benchmark, shards, mirror, sources)
    if model_spec["backend"] != "replay":  # a live model runs every task of the benchmark
        tasks = [
            RunTask(run["model"], run["method"], benchmark, task, shards, model_spec, method_spec)
            for task in tasks_of(benchmark)
        ]
        return tasks, []
    recording = model_spec["recording"]
    if recording not in RECORDINGS:
        raise ConfigError(
            f"models.{run['model']}.recording: unknown recording {recording!r}; "
            f"known: {', '.join(RECORDINGS)}"
        )
    mask = method_spec["mask"]
    recorded = {r.task: r for r in recorded_runs(recording, benchmark, mask)}
    files = {task: (r.file, {"recorded": r}) for task, r in recorded.items()}
    tasks, notes, unrecorded = _tasks_from_files(
        run, model_spec, method_spec, benchmark, shards, mirror, files, "recorded upstream"
    )
    group = tuple(r for r in recorded.values() if available(r.file.url, mirror))
    tasks = [replace(t, recorded_group=group) for t in tasks]
    if unrecorded:
        notes.append(
            {
                **base,
                "level": "note",
                "message": f"{recording} has no recording of mask {mask} for "
                + ", ".join(unrecorded),
            }
        )
    return tasks, notes


def config_hash(config: dict) -> str:
    """sha256 of the config as it shapes results (the mirror location does not)."""
    return sha256_json({k: v for k, v in config.items() if k != "mirror"})


def _imported_tasks(run, model_spec, method_spec, benchmark, shards, mirror, sources):
    """An imported run covers the tasks its source has a pinned file for; a task it
    lacks, or whose file the mirror lacks, is left out with a note."""
    source = sources[run["model"]]
    files = {}
    for task in tasks_of(benchmark):
        file = task_file(source, benchmark, task)
        if file is not None:
            files[task] = (file, {"imported": file, "imported_format": source["format"]})
    origin = f"published in {source['name']}"
    tasks, notes, absent = _tasks_from_files(
        run, model_spec, method_spec, benchmark, shards, mirror, files, origin
    )
    if absent:
        notes.append(
            {
                "model": run["model"],
                "method": run["method"],
                "benchmark": benchmark,
                "level": "note",
                "message": f"{source['name']} has no pinned output for " + ", ".join(absent),
            }
        )
    return tasks, notes


def _tasks_from_files(run, model_spec, method_spec, benchmark, shards, mirror, files, origin):
    """The tasks of a run answered from pinned files (replayed or imported).

    ``files``: task -> (its file, the RunTask fields naming it). Returns the tasks,
    a warning for each file the mirror lacks, and the tasks without a file.
    """
    base = {"model": run["model"], "method": run["method"], "benchmark": benchmark}
    tasks, notes, absent = [], [], []
    for task in tasks_of(benchmark):
        if task not in files:
            absent.append(task)
            continue
        file, fields = files[task]
        if not available(file.url, mirror):
            notes.append(
                {
                    **base,
                    "level": "warning",
                    "message": f"{task}: {origin} ({file.url}) but the mirror {mirror} "
                    "lacks it; left out of this report",
                }
            )
        else:
            tasks.append(
                RunTask(
                    run["model"],
                    run["method"],
                    benchmark,
                    task,
                    shards,
                    model_spec,
                    method_spec,
                    **fields,
                )
            )
    return tasks, notes, absent
