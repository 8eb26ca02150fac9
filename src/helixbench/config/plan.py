"""The runs a config asks for, as the workflow executes them.

A run is a (model, method) pair covering one or more benchmark tasks (a
:class:`RunTask` each). The run is the unit of the workflow's jobs: its
questions, across all its tasks, are split into ``shards`` run jobs and scored
by one score job, so a sweep of thousands of (model, method, task) triples stays
a job graph Snakemake builds in seconds. :mod:`helixbench.config` builds the
:class:`Plan` from a config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .. import paths
from ..benchmarks import question_files
from ..datasets.questions import slugify
from ..datasets.upstream import UpstreamFile, manifest
from ..digests import sha256_json
from ..models import SERVING_SETTINGS, Backend, backend
from ..paths import upstream_path
from ..retrieval import corpus_files
from ..scoring import scorers_for
from ..scoring.background import go_files
from ..scoring.jury import judge_names
from ..sources.recordings import RecordedRun

# The agent methods of the plan last built that run without a sandbox (`sandbox:
# cooperative`): every label of their runs says so, wherever their scores appear.
UNSANDBOXED: set[str] = set()
UNSANDBOXED_MARK = " [unsandboxed]"


def run_label(model: str, method: str) -> str:
    """How a run is named to a reader: ``model / method`` (marked where the method's
    agent ran without a sandbox)."""
    return f"{model} / {method}{UNSANDBOXED_MARK if method in UNSANDBOXED else ''}"


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
    # A LABBench2 source's reports of this task, (path, sha256) in the order its
    # retries came (pinned: the run then each retry; a user's own: as the config lists).
    imported_reports: tuple[tuple[str, str], ...] = ()
    gsea_terms: UpstreamFile | None = None  # recorded top enrichment terms (gsea-top1)
    index: str | None = None  # the corpus index the method retrieves from (brad)
    # Multiple choice (methods.choices): the peers' wording, and the pinned upstream
    # files a prompt variant reads its template from.
    choice_templates: str | None = None
    choice_upstream: tuple[UpstreamFile, ...] = ()
    choice_variant: str | None = None  # the benchmark's own (BixBench's), whatever the method's

    @property
    def label(self) -> str:
        return run_label(self.model, self.method)

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
            **self._reports_spec(),
            "gsea_terms": upstream_path(self.gsea_terms) if self.gsea_terms else None,
            "index": self.index,
            **self._choice_spec(),
        }

    def _reports_spec(self) -> dict:
        if not self.imported_reports:  # (no LABBench2 reports: its spec as before)
            return {}
        return {"imported_reports": [list(r) for r in self.imported_reports]}

    def _choice_spec(self) -> dict:
        if not self.choice_templates:  # (a task of no multiple choice: its spec as before)
            return {}
        upstream = [upstream_path(f) for f in self.choice_upstream]
        fixed = {"choice_variant": self.choice_variant} if self.choice_variant else {}
        return {"choice_templates": self.choice_templates, "choice_upstream": upstream, **fixed}


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
    def backend(self) -> type[Backend]:
        return backend(self.model_spec["backend"])

    @property
    def label(self) -> str:
        return run_label(self.model, self.method)

    @cached_property  # (its files' paths ask for it: thousands of times in a sweep)
    def variant(self) -> str:
        """A digest of what shapes the run (its spec): the folder its files lie in, so
        that two configs that give one name to two runs keep each their own."""
        return sha256_json(self.spec())[:8]

    @property
    def wildcards(self) -> dict:
        return {"model": self.model, "method": self.method, "variant": self.variant}

    def shard_paths(self) -> list[str]:
        return [
            paths.RUN_SHARD.format(**self.wildcards, shard=i, shards=self.shards)
            for i in range(self.shards)
        ]

    @property
    def summary_path(self) -> str:
        return paths.RUN_SUMMARY.format(**self.wildcards)

    @property
    def prompts_path(self) -> str:
        return paths.RUN_PROMPTS.format(**self.wildcards)

    @property
    def score_table_path(self) -> str:
        return paths.RUN_SCORE_TABLE.format(**self.wildcards)

    @property
    def details_path(self) -> str:
        return paths.RUN_DETAILS.format(**self.wildcards)

    @property
    def score_path(self) -> str:
        return paths.RUN_SCORES.format(**self.wildcards)

    @property
    def fingerprint_path(self) -> str:
        return paths.RUN_FINGERPRINT.format(**self.wildcards)

    @property
    def judge_calls_path(self) -> str:
        return paths.RUN_JUDGE_CALLS.format(**self.wildcards)

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
        paths_ += [path for t in self.tasks for path, _ in t.imported_reports]
        paths_ += [upstream_path(t.gsea_terms) for t in self.tasks if t.gsea_terms]
        paths_ += [f"{paths.UPSTREAM_DIR}/{p}" for p in self.first.method_spec.get("upstream", [])]
        for task in self.tasks:  # a multiple-choice prompt's wording
            paths_ += [task.choice_templates] if task.choice_templates else []
            paths_ += [upstream_path(f) for f in task.choice_upstream]
        if self.environment:
            paths_.append(self.environment)
        if {"python", "bash"} & set(self.first.method_spec.get("tools") or ()):
            paths_.append(paths.CODE_ENV)  # the code tools' environment
        if self.first.method_spec.get("prepared"):  # what an original built (its database)
            paths_.append(self.first.method_spec["prepared"])
        return list(dict.fromkeys(paths_))

    @property
    def environment(self) -> str | None:
        """The built environment (its env.json) an original's program runs in."""
        python = self.first.method_spec.get("python", "")
        return python if python.startswith("resources/envs/") else None

    @property
    def index_markers(self) -> list[str]:
        """The built marks of the corpus indexes the run retrieves from."""
        return list(dict.fromkeys(f"{t.index}/index.json" for t in self.tasks if t.index))

    @property
    def needs_local_stack(self) -> bool:
        """Whether its jobs load PyTorch: a local model, or a corpus index to embed
        queries against."""
        return self.backend.in_process or bool(self.index_markers)

    @property
    def imported(self) -> bool:
        return self.backend.published

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
        return self.backend.endpoint(self.model_spec)

    @property
    def model_dir(self) -> str | None:
        """The prepared local model the run loads (a converted GGUF file)."""
        return self.backend.converted_dir(self.model_spec)

    @property
    def gpus(self) -> int:
        """GPUs a local model job asks the cluster for (the profile passes it to SLURM)."""
        return self.backend.gpus(self.model_spec)

    @property
    def threads(self) -> int:
        return self.backend.threads(self.model_spec)

    def spec(self) -> dict:
        """What a run or score job needs to know, as JSON-able data: one dict, made once
        (a sweep's Snakemake asks for it several times a run), for reading."""
        return self._spec

    @cached_property
    def _spec(self) -> dict:
        return {
            "model": self.model,
            "method": self.method,
            "shards": self.shards,
            # without the serving settings: they shape no record (models.SERVING_ENV)
            "model_spec": {k: v for k, v in self.model_spec.items() if k not in SERVING_SETTINGS},
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
    indexes: dict = field(default_factory=dict)  # corpus index key -> its settings (brad)
    references: dict = field(default_factory=dict)  # imported model -> {task: its ranks file}
    models: dict = field(default_factory=dict)  # the config's models (the scorers' judges too)

    def scoring_models(self) -> list[tuple[str, str, dict]]:
        """(role, model name, its config entry) of each model the scorers call: the
        judge, the extractor, RAGAs' judge (their scores need them too)."""
        scoring, models = self.scoring or {}, self.models or {}
        named = [("judge", name) for name in judge_names(scoring)]
        named.append(("extractor", (scoring.get("extractor") or {}).get("model")))
        named.append(("ragas.judge", (scoring.get("ragas") or {}).get("judge")))
        return [(role, name, models[name]) for role, name in named if name and name in models]

    def __post_init__(self):
        grouped: dict[tuple[str, str], list[RunTask]] = {}
        for task in self.tasks:
            grouped.setdefault((task.model, task.method), []).append(task)
        self.runs = [Run(tuple(tasks)) for tasks in grouped.values()]
        self._pinned = None
        self._percentile_tasks = None
        # Snakemake asks for a job's run once per input function: keep lookups O(1).
        self._by_wildcards = {(r.model, r.method): r for r in self.runs}
        self._by_recording = {
            (r.recording, r.run_dir, slugify(r.task)): r
            for r in [t.recorded for t in self.tasks if t.recorded] + self.snapshot_runs
        }

    def console_warnings(self, shown: int = 2) -> list[str]:
        """The warnings for the console: a run's first ``shown``, then how many more
        (the report lists them all)."""
        by_run: dict[str, list[str]] = {}
        for note in self.notes:
            if note["level"] == "warning":
                by_run.setdefault(f"{note['model']} / {note['method']}", []).append(note["message"])
        lines = []
        for run, messages in by_run.items():
            lines += [f"{run}: {message}" for message in messages[:shown]]
            if len(messages) > shown:
                lines.append(
                    f"{run}: {len(messages) - shown} more like these (the report lists them)"
                )
        return lines

    def score_batches(self, size: int) -> dict[str, list[Run]]:
        """Batch id -> the runs one score job scores: the plan's runs in order, ``size``
        at a time, across models (a sweep of many models with few runs each starts a job
        per ``size`` runs, not one per model). A run added at the end of the plan joins
        the last batch or starts one; the id is the batch's place and a digest of its
        runs, so configs that share run names keep each their own batches."""
        batches = {}
        for i in range(0, len(self.runs), size):
            batch = self.runs[i : i + size]
            digest = sha256_json([[r.model, r.method, r.variant] for r in batch])[:8]
            batches[f"{i // size}-{digest}"] = batch
        return batches

    def find(self, model: str, method: str, variant: str | None = None) -> Run:
        """The planned run ``model``/``method`` (of that ``variant``, where given)."""
        run = self._by_wildcards.get((model, method))
        if run is None or variant not in (None, run.variant):
            raise KeyError(f"no planned run {model}/{method}{f'/{variant}' if variant else ''}")
        return run

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
        files += [f for ranks in self.references.values() for f in ranks.values()]
        files += [f for s in self.indexes.values() for f in corpus_files(s["corpus"])]
        pinned = manifest()
        files += [pinned[p] for t in self.tasks for p in t.method_spec.get("upstream", [])]
        if any(self.ranks_against_go(run) for run in self.runs):
            files += go_files()
        return list(dict.fromkeys(files))

    def ranks_against_go(self, run: Run) -> bool:
        """Whether the run's percentile scores rank against the GO background (built
        once, by its own job, from the pinned GO files): the default, unless the config
        names a candidates file or ``background: datasets``."""
        settings = self.scoring.get("percentile", {})
        if settings.get("candidates") or settings.get("background", "go") != "go":
            return False
        if self._percentile_tasks is None:  # (asked once a run: each task looked up once)
            tasks = {t.task for t in self.tasks}
            self._percentile_tasks = {
                t for t in tasks if "percentile" in scorers_for(t, self.scoring)
            }
        return any(t.task in self._percentile_tasks for t in run.tasks)

    def pinned(self, relpath: str) -> UpstreamFile | None:
        """The planned upstream file at ``relpath`` (pinned by the manifest or the config)."""
        if self._pinned is None:  # asked once per fetch job: index the files once
            self._pinned = {f.relpath: f for f in self.upstream_files()}
        return self._pinned.get(relpath)

    def serving(self) -> dict[str, dict]:
        """Model name -> its serving settings (``concurrency``), for the run jobs."""
        out = {}
        for run in self.runs:
            settings = {k: run.model_spec[k] for k in SERVING_SETTINGS if k in run.model_spec}
            if settings:
                out[run.model] = settings
        return out

    def endpoints(self) -> dict[str, int]:
        """Resource name -> concurrent jobs allowed, for every model server in the plan."""
        limits: dict[str, int] = {}
        for run in self.runs:
            if run.endpoint:
                limit = int(run.model_spec.get("concurrency", 4))
                limits[run.endpoint] = min(limits.get(run.endpoint, limit), limit)
        return limits

    def seed(self, recording: str, files: str) -> list[RecordedRun]:
        """The recorded runs of the seed marker ``recording``/``files``."""
        try:
            return self.seeds[paths.TOOL_CACHE_SEED.format(recording=recording, files=files)]
        except KeyError:
            raise KeyError(f"no planned tool-cache seed {recording}/{files}") from None
