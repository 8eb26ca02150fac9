"""From a (schema-validated) config to the :class:`~helixbench.config.plan.Plan`.

Methods resolve to specs (presets, ``genegpt-<mask>``), sweeps expand to every
combination, and each run gets its tasks: a replay run covers exactly the tasks
upstream recorded for its mask, the rest skipped with a note, and a recorded task
the mirror lacks skipped with a warning, so the report says what is missing. A
value the schema admits but that makes no sense is a :class:`ConfigError` naming
its key.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from .. import paths
from ..benchmarks import get as get_benchmark
from ..benchmarks import is_sample, tasks_of
from ..benchmarks.genesets import FILES as GENESET_FILES
from ..datasets.fetch import available
from ..datasets.questions import slugify
from ..datasets.upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, lookup
from ..digests import sha256_json
from ..errors import ConfigError, unknown_name
from ..gateway.sandbox.view import check_paths, judged_places
from ..genegpt_format import MASK, check_mask
from ..methods import ANY_BENCHMARK_KINDS, CHAT_KINDS, GENESET_KINDS
from ..methods.genegpt import PRESETS
from ..methods.originals import RUNNERS_DIR, complete_spec, original
from ..models import backend
from ..retrieval import index_key, index_settings
from ..scoring import DEFAULT_SCORING, MODEL_SCORERS
from ..scoring.jury import judge_names
from ..sources.answer_keys import answer_key
from ..sources.published import (
    SourceError,
    claimed_files,
    rank_files,
    resolve_source,
)
from ..sources.recordings import RECORDINGS, recorded_runs, snapshot_run
from ..tools.executor import ToolSettings
from . import plan as plan_module
from .plan import Plan
from .tasks import RunConfig, run_tasks

__all__ = ["ConfigError", "build_plan", "config_hash", "resolve_method", "resolve_scoring"]

MASK_METHOD = re.compile(rf"^genegpt-({MASK})$")


def resolve_method(name: str, methods: dict) -> dict:
    """A method's spec: from config, else a preset, else ``genegpt-<mask>`` for any mask."""
    if name in methods:
        spec = dict(methods[name])
    elif name in PRESETS:
        spec = {"kind": "genegpt", "mask": PRESETS[name]}
    elif name == "imported":  # a published system's outputs (models with backend imported)
        spec = {"kind": "imported"}
    elif name in (*GENESET_KINDS, *CHAT_KINDS, *ANY_BENCHMARK_KINDS):  # by kind, defaults
        spec = {"kind": name}
    elif match := MASK_METHOD.match(name):
        spec = {"kind": "genegpt", "mask": match.group(1)}
    else:
        raise KeyError(name)
    if spec.get("kind") == "genegpt" or "mask" in spec:
        check_mask(spec.get("mask"))
    if spec.get("kind") == "agent" and spec.get("original"):
        spec = complete_spec(spec)  # a seed system: its runner, environment and code
    if spec.get("kind") == "geneagent" and spec.get("prompts", "upstream") == "upstream":
        # main_cascade.py's own prompts and functions: the seed system's files, fetched
        files = original("geneagent-cascade").upstream_files()
        spec = {"upstream": [f.relpath for f in files], **spec}
    return spec


def method_names(methods: dict) -> list[str]:
    """Every method name a run may use without a mask: the config's, then the presets."""
    kinds = (*GENESET_KINDS, *CHAT_KINDS, *ANY_BENCHMARK_KINDS, "imported")
    return list(dict.fromkeys([*methods, *PRESETS, *kinds]))


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
    indexes: dict[str, dict] = {}  # index key -> its settings (brad methods)
    sources = {}
    seen = set()
    for where, run in expand_runs(config.get("runs", [])):
        if run["model"] not in models:
            raise ConfigError(f"{where}.model: {unknown_name('model', run['model'], models)}")
        try:
            method_spec = resolve_method(run["method"], methods)
        except KeyError:
            raise ConfigError(
                f"{where}.method: {unknown_name('method', run['method'], method_names(methods))}"
                " (or genegpt-<six-digit mask>; define others under 'methods')"
            ) from None
        except ValueError as exc:
            raise ConfigError(f"methods.{run['method']}.mask: {exc}") from None
        if (run["model"], run["method"]) in seen:
            raise ConfigError(f"{where}: run {run['model']} x {run['method']} is listed twice")
        seen.add((run["model"], run["method"]))
        model_spec = models[run["model"]]
        facts = backend(model_spec["backend"])
        # Replayed and imported runs call no tool: their replies are recorded.
        replay = facts.recorded or facts.published
        mode = run.get("tools") or ("replay" if replay else tools_config.get("mode", "offline"))
        benchmarks = run.get("benchmarks", config.get("benchmarks", []))
        _check_pairing(where, run, benchmarks, model_spec, method_spec)
        if method_spec["kind"] == "agent":
            _check_agent_view(f"methods.{run['method']}", method_spec, config)
        if facts.published and run["model"] not in sources:
            try:
                sources[run["model"]] = resolve_source(
                    model_spec["source"], f"models.{run['model']}.source"
                )
            except SourceError as exc:
                raise ConfigError(str(exc)) from None
        tools = {"mode": mode}  # the rest of ``tools`` shapes no result: jobs get it apart
        _check_task_names(where, run.get("tasks") or [], benchmarks)
        of_run = RunConfig(
            where, run, model_spec, method_spec, run.get("shards", config.get("shards", 1)), mirror
        )
        for benchmark in benchmarks:
            new, new_notes = run_tasks(of_run, benchmark, sources)
            if run.get("tasks"):  # a run restricted to some tasks (by name or slug)
                wanted = set(run["tasks"])
                new = [t for t in new if t.task in wanted or t.task_slug in wanted]
            else:  # toy samples, other groups' sets: only when named (or imported)
                new = [t for t in new if not is_sample(t.task) or t.imported is not None]
            if method_spec["kind"] == "gsea-top1":
                new = [replace(t, gsea_terms=RECORDED_GSEA.get(t.task)) for t in new]
            if method_spec["kind"] == "brad":
                index = _index(where, method_spec, indexes)
                new = [replace(t, index=index) for t in new]
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
    _refuse_self_judging(scoring, models, {t.model for t in tasks})
    for model in config.get("prices", {}):
        if model not in models:
            raise ConfigError(f"prices.{model}: {unknown_name('model', model, models)}")
    # The files stating a source's own score (the report quotes them where mirrored).
    claims = {
        model: {b: f for b, f in claimed_files(source).items() if available(f.url, mirror)}
        for model, source in sources.items()
    }
    # A source's own similarity ranks (Hu et al.'s), beside our percentile.
    references = {
        model: {t: f for t, f in rank_files(source).items() if available(f.url, mirror)}
        for model, source in sources.items()
    }
    plan_module.UNSANDBOXED.clear()  # the labels this plan's report prints mark them
    plan_module.UNSANDBOXED.update(
        t.method
        for t in tasks
        if t.method_spec.get("kind") == "agent" and t.method_spec.get("sandbox") == "cooperative"
    )
    return Plan(
        tasks,
        notes,
        snapshot_runs,
        live_snapshots,
        seeds,
        tools_config,
        scoring,
        sources,
        claims,
        indexes,
        references,
        models,
    )


def _index(where: str, method_spec: dict, indexes: dict) -> str:
    """The index directory a brad method retrieves from (its settings kept by key)."""
    settings = index_settings(method_spec)
    try:
        key = index_key(settings, paths.upstream_path)
    except FileNotFoundError as exc:
        raise ConfigError(f"{where}: method {method_spec}: {exc}") from None
    indexes[key] = settings
    return paths.INDEX_DIR.format(key=key)


# GeneAgent's recorded g:Profiler top terms, for the sets of the MSigDB dataset.
_TOP1 = lookup(GENEAGENT_REPO, "GSEATerms/MsigDB.EnrichTerms.top1.json", GENEAGENT_COMMIT)
RECORDED_GSEA = {task: _TOP1 for task in GENESET_FILES if task.startswith("MSigDB")}


def _check_pairing(where: str, run: dict, benchmarks, model_spec: dict, method_spec: dict):
    """Which methods run on which benchmarks, and which need which backend."""
    kind, facts = method_spec["kind"], backend(model_spec["backend"])
    # A source that answers no prompt and is no published system: enrichment analysis.
    enrichment = not facts.answers_prompts and not facts.published
    benchmarks = set(benchmarks)
    label = f"{run['model']} x {run['method']}"
    if kind in GENESET_KINDS and benchmarks - {"genesets"}:
        raise ConfigError(f"{where}: {kind} names gene sets: set benchmarks: [genesets] ({label})")
    if kind not in (*GENESET_KINDS, *ANY_BENCHMARK_KINDS, "imported") and "genesets" in benchmarks:
        raise ConfigError(
            f"{where}: benchmark genesets takes closed-book, geneagent, gsea-top1, brad, agent "
            "or imported"
        )
    if kind in ANY_BENCHMARK_KINDS and not facts.answers_prompts:
        raise ConfigError(f"{where}: {kind} needs a language model ({label})")
    if enrichment != (kind == "gsea-top1"):
        raise ConfigError(
            f"{where}: gsea-top1 runs with a model of backend enrichment, and only it ({label})"
        )
    if method_spec.get("original") and benchmarks - set(
        original(method_spec["original"]).benchmarks
    ):
        system = original(method_spec["original"])
        raise ConfigError(
            f"{where}: {system.name} answers {', '.join(system.benchmarks)} only ({label})"
        )
    choice = sorted(b for b in benchmarks if get_benchmark(b).multiple_choice)
    if choice and kind not in (*CHAT_KINDS, "agent", "imported"):
        raise ConfigError(
            f"{where}: {', '.join(choice)} asks multiple choice: its methods are no-tools, "
            f"function-calling and agent ({label})"
        )
    if kind == "agent" and not method_spec.get("command"):
        raise ConfigError(f"{where}: an agent method needs `command`, its argv list ({label})")
    if facts.recorded and kind != "genegpt":
        raise ConfigError(f"{where}: a replayed recording needs a genegpt method ({label})")
    if kind in CHAT_KINDS and not facts.chats(model_spec):
        raise ConfigError(
            f"{where}: {kind} needs a chat model (api: chat on a server, chat_template: true "
            f"for a local model) ({label})"
        )
    if facts.published != (kind == "imported"):
        raise ConfigError(
            f"{where}: an imported model takes the method 'imported' (a method of kind "
            f"imported), and only it does ({label})"
        )


def _check_agent_view(where: str, spec: dict, config: dict) -> None:
    """An agent is shown no benchmark's files: its ``upstream`` files are no answer
    key, and its ``paths`` neither hold nor lie in what runs are judged by."""
    for relpath in spec.get("upstream", []) if not spec.get("original") else []:
        holds = answer_key(relpath)
        if holds:
            raise ConfigError(f"{where}.upstream: {relpath} holds {holds}; no agent may read it")
    caches = {config.get("tools", {}).get("cache"): "the tool cache"}
    caches[config.get("model_cache")] = "the model cache"
    places = judged_places({p: why for p, why in caches.items() if p})
    values = {"runners": str(RUNNERS_DIR), "upstream_dir": str(Path(paths.UPSTREAM_DIR).resolve())}
    for entry in spec.get("paths", []):
        try:
            path = str(entry).format(**values)
        except (KeyError, IndexError, ValueError):
            continue  # a placeholder only the run job fills in ({workdir}): checked there
        check_paths(f"{where}.paths", [path], places)


def _check_task_names(where: str, names: list[str], benchmarks: list[str]) -> None:
    """Every task a run names (by name or slug) is a task of one of its benchmarks."""
    if not names:
        return
    known = {
        name: benchmark
        for benchmark in benchmarks
        for task in tasks_of(benchmark)
        for name in (task, slugify(task))
    }
    for name in names:
        if name not in known:
            tasks = [task for benchmark in benchmarks for task in tasks_of(benchmark)]
            raise ConfigError(f"{where}.tasks: {unknown_name('task', name, tasks)}")


def resolve_scoring(config: dict) -> dict:
    """The config's ``scoring`` over the defaults (per task: the config's list wins)."""
    given = config.get("scoring", {})
    scoring = {**DEFAULT_SCORING, **given}
    scoring["tasks"] = {**DEFAULT_SCORING["tasks"], **given.get("tasks", {})}
    for scorer, key in MODEL_SCORERS.items():
        used = scorer in scoring["default"] or any(
            scorer in names for names in scoring["tasks"].values()
        )
        named = judge_names(scoring) if key == "judge" else [scoring.get(key, {}).get("model")]
        named = [n for n in named if n]
        if used and not named:
            raise ConfigError(f"scoring: the {scorer!r} scorer needs scoring.{key}.model")
        for model in named:
            if model not in config.get("models", {}):
                known = config.get("models", {})
                raise ConfigError(f"scoring.{key}.model: {unknown_name('model', model, known)}")
    judge = scoring.get("ragas", {}).get("judge")
    if judge and judge not in config.get("models", {}):
        raise ConfigError(
            f"scoring.ragas.judge: {unknown_name('model', judge, config.get('models', {}))}"
        )
    return scoring


def _refuse_self_judging(scoring: dict, models: dict, judged: set[str]) -> None:
    """A judge that is a judged model (the same model as the ecosystem names it, through
    any backend) grades its own answers: refused in one line, unless
    ``scoring.judge.self_judging`` says it is meant (the report then marks it)."""
    from ..models.card import model_card

    if (scoring.get("judge") or {}).get("self_judging"):
        return
    for judge in judge_names(scoring):
        if judge not in models:
            continue
        judge_id = model_card(judge, models[judge])["id"]
        for name in sorted(judged):
            if name == judge or model_card(name, models.get(name, {}))["id"] == judge_id:
                raise ConfigError(
                    f"scoring.judge.model: {judge!r} is the judged model {name!r} ({judge_id}):"
                    " a judge grading its own answers; use another, or set "
                    "scoring.judge.self_judging: true to mean it (its scores are then marked)"
                )


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
                f"tools.seed[{i}]: {unknown_name('recording', recording, RECORDINGS)}"
            )
        masks = entry.get("masks") or [None]
        runs = [
            r
            for benchmark in RECORDINGS[recording]["dirs"]
            for mask in masks
            for r in recorded_runs(recording, benchmark, mask)
            if available(r.file.url, mirror)
        ]
        files = sha256_json(sorted(r.file.relpath for r in runs))[:12]
        seeds[paths.TOOL_CACHE_SEED.format(recording=recording, files=files)] = runs
    return seeds


def _snapshot_path(task, run, live_snapshots, snapshot_runs, mirror) -> str | None:
    """Where the demonstration snapshot of ``task``'s method lies (None: the method needs
    none, or reads it off its recording)."""
    kind = task.method_spec.get("kind")
    if kind == "function-calling" and task.method_spec.get("demonstrations", True):
        default = "genegpt-2023"  # the demonstrations' replies GeneGPT's header embeds
    elif kind == "agent" and task.method_spec.get("original") == "genegpt-main":
        default = "genegpt-2023"  # main.py's header calls are answered from it
    elif kind != "genegpt":
        return None
    else:
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
        known = ["recorded", *RECORDINGS, *live_snapshots]
        raise ConfigError(f"{where}: {unknown_name('snapshot', name, known)}")
    recorded = snapshot_run(name)
    if recorded not in snapshot_runs and not available(recorded.file.url, mirror):
        raise ConfigError(f"{where}: snapshot {name} needs {recorded.file.url}; not mirrored")
    if recorded not in snapshot_runs:
        snapshot_runs.append(recorded)
    return paths.RECORDED_SNAPSHOT.format(
        recording=recorded.recording, run_dir=recorded.run_dir, task=slugify(recorded.task)
    )


def config_hash(config: dict) -> str:
    """sha256 of the config as it shapes results (the mirror location does not)."""
    return sha256_json({k: v for k, v in config.items() if k != "mirror"})
