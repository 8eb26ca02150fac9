"""Each run's tasks, by what answers them: a live model every task it can ask, a
replayed run the tasks upstream recorded for its mask, an imported run the tasks its
source published (a LABBench2 system's reports, by the method's flags, or a user's
own); a file the mirror lacks leaves its task out with a warning."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .. import paths
from ..benchmarks import get as get_benchmark
from ..benchmarks import tasks_of
from ..datasets.fetch import available
from ..datasets.questions import NEEDS_FILES, slugify
from ..errors import ConfigError, DataError, unknown_name
from ..methods.choices import template_source, upstream_sources
from ..models import backend
from ..sources.labbench2 import local_reports, pinned_reports
from ..sources.published import task_file
from ..sources.recordings import RECORDINGS, recorded_runs
from .plan import RunTask


@dataclass(frozen=True)
class RunConfig:
    """One run entry of the config, resolved: what its tasks are built from."""

    where: str  # e.g. "runs[2]", for messages
    run: dict
    model_spec: dict
    method_spec: dict
    shards: int
    mirror: Path | None

    def task(self, benchmark: str, task: str, **fields) -> RunTask:
        run = self.run
        of = get_benchmark(benchmark)
        if of.multiple_choice or of.choice_variant:  # the prompt variant's wording
            variant = of.choice_variant or self.method_spec.get("choices", "inspect")
            fields["choice_templates"] = template_source(variant)
            fields["choice_upstream"] = tuple(upstream_sources(variant))
            fields["choice_variant"] = of.choice_variant
        return RunTask(
            run["model"],
            run["method"],
            benchmark,
            task,
            self.shards,
            self.model_spec,
            self.method_spec,
            **fields,
        )

    def note(self, benchmark: str, level: str, message: str) -> dict:
        run = self.run
        return {
            "model": run["model"],
            "method": run["method"],
            "benchmark": benchmark,
            "level": level,
            "message": message,
        }


def run_tasks(of_run: RunConfig, benchmark: str, sources: dict):
    run, model_spec = of_run.run, of_run.model_spec
    facts = backend(model_spec["backend"])
    if facts.published:
        return _imported_tasks(of_run, benchmark, sources)
    if not facts.recorded:  # a live model runs every task of the benchmark it can ask
        held = get_benchmark(benchmark).imported_only
        asked = [of_run.task(benchmark, t) for t in tasks_of(benchmark) if t not in held]
        named = [t for t in held if {t, slugify(t)} & set(run.get("tasks") or ())]
        message = f"{', '.join(named)}: every question needs {NEEDS_FILES}; imported runs only"
        return asked, [of_run.note(benchmark, "warning", message)] if named else []
    recording = model_spec["recording"]
    if recording not in RECORDINGS:
        raise ConfigError(
            f"models.{run['model']}.recording: {unknown_name('recording', recording, RECORDINGS)}"
        )
    mask = of_run.method_spec["mask"]
    recorded = {r.task: r for r in recorded_runs(recording, benchmark, mask)}
    files = {task: (r.file, {"recorded": r}) for task, r in recorded.items()}
    tasks, notes, unrecorded = _tasks_from_files(of_run, benchmark, files, "recorded upstream")
    group = tuple(r for r in recorded.values() if available(r.file.url, of_run.mirror))
    tasks = [replace(t, recorded_group=group) for t in tasks]
    if unrecorded:
        message = f"{recording} has no recording of mask {mask} for " + ", ".join(unrecorded)
        notes.append(of_run.note(benchmark, "note", message))
    return tasks, notes


def _imported_tasks(of_run: RunConfig, benchmark: str, sources: dict):
    """An imported run covers the tasks its source has a pinned file for; a task it
    lacks, or whose file the mirror lacks, is left out, with a note where the run named
    it (a run that names no task covers what its source published, and says nothing of
    what it did not)."""
    source = sources[of_run.run["model"]]
    if source["format"] == "labbench2":
        return _labbench2_tasks(of_run, benchmark, source)
    if "reports" in source:  # a user's own files (BixBench's), of this benchmark's tasks
        mine = in_task_order(source["reports"], benchmark, others=False)
        fields = {"imported_format": source["format"]}
        given = _checked(of_run, mine, source["format"]).items()
        return [of_run.task(benchmark, t, **fields, imported_reports=r) for t, r in given], []
    files = {}
    for task in tasks_of(benchmark):
        file = task_file(source, benchmark, task)
        if file is not None:
            files[task] = (file, {"imported": file, "imported_format": source["format"]})
    origin = f"published in {source['name']}"
    tasks, notes, absent = _tasks_from_files(of_run, benchmark, files, origin)
    named = set(of_run.run.get("tasks") or ())
    absent = [task for task in absent if task in named or slugify(task) in named]
    if absent:
        message = f"{source['name']} has no pinned output for " + ", ".join(absent)
        notes.append(of_run.note(benchmark, "note", message))
    return tasks, notes


def in_task_order(reports: dict, benchmark: str, others: bool = True) -> dict:
    """A user's ``reports`` (task -> files) in the benchmark's task order, never the
    config's key order: the run's folder (a digest of its tasks) is the same however the
    mapping was written or read. ``others``: tasks not the benchmark's kept, after, by
    name (else left out: another benchmark's)."""
    known = [t for t in tasks_of(benchmark) if t in reports]
    rest = sorted(t for t in reports if t not in known) if others else []
    return {t: reports[t] for t in [*known, *rest]}


def _checked(of_run: RunConfig, reports: dict, format_name: str) -> dict:
    """A user's own files, each checked as its format must be: one that is not is a
    config error naming the key and the file."""
    try:
        return local_reports(reports, format_name)
    except (DataError, OSError) as exc:
        where = f"models.{of_run.run['model']}.source.reports"
        raise ConfigError(f"{where}: {exc}") from None


def _labbench2_tasks(of_run: RunConfig, benchmark: str, source: dict):
    """A LABBench2 source's tasks: each task's reports of the system with the method's
    ``flags`` (pinned), or the user's own reports (local files, read as they are)."""
    if benchmark != "labbench2":
        return [], []
    if "reports" in source:  # a user's own run: every task it names
        given = _checked(of_run, in_task_order(source["reports"], benchmark), "labbench2")
        fields = {"imported_format": "labbench2"}
        tasks = [of_run.task(benchmark, t, **fields, imported_reports=r) for t, r in given.items()]
        return tasks, []
    flags = of_run.method_spec.get("flags", "")
    found = pinned_reports(source["system"], flags)
    if not found:
        method = f"methods.{of_run.run['method']}.flags"
        raise ConfigError(f"{of_run.where}: {source['name']} has no report with {method} {flags!r}")
    files = {}
    for task, reports in found.items():
        pinned = tuple((paths.upstream_path(f), f.sha256) for f in reports)
        fields = {
            "imported": reports[0],
            "imported_format": "labbench2",
            "imported_reports": pinned,
        }
        files[task] = (reports[0], fields)
    return _tasks_from_files(of_run, benchmark, files, f"published in {source['name']}")[:2]


def _tasks_from_files(of_run: RunConfig, benchmark: str, files: dict, origin: str):
    """The tasks of a run answered from pinned files (replayed or imported).

    ``files``: task -> (its file, the RunTask fields naming it). Returns the tasks,
    a warning for each file the mirror lacks, and the tasks without a file.
    """
    tasks, notes, absent = [], [], []
    for task in tasks_of(benchmark):
        if task not in files:
            absent.append(task)
            continue
        file, fields = files[task]
        if not available(file.url, of_run.mirror):
            message = (
                f"{task}: {origin} ({file.url}) but the mirror {of_run.mirror} lacks it; "
                "left out of this report"
            )
            notes.append(of_run.note(benchmark, "warning", message))
        else:
            tasks.append(of_run.task(benchmark, task, **fields))
    return tasks, notes, absent
