"""The benchmarks of the question bank, one module each, and their registry.

A benchmark module declares one or more :class:`Benchmark`: the upstream files it
reads (pinned in the manifest: URL and sha256), its tasks by module, a loader that
turns those files into questions (with ``choices`` where it asks multiple choice),
its default scorers and primary metric, its citation and licence. Nothing else
names a benchmark: the config's schema, the question table, scoring's defaults and
the report's question bank read them here. A new benchmark is a module of this
package, its manifest rows and its tests; the registry finds it by itself.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..datasets.overlap import link_overlaps
from ..datasets.questions import Question, slugify, write_questions
from ..datasets.upstream import UpstreamFile

# Where an upstream file lies: the mirror's copy, or the fetched one.
LocalPath = Callable[[UpstreamFile], Path]
# The scorers of a task no benchmark gives its own (GeneTuring's rules).
DEFAULT_SCORERS = ("genegpt", "extracted", "strict")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: what it reads, asks and scores, and whom to cite."""

    name: str  # as a config names it (benchmarks: [...])
    label: str  # as the report names it
    order: int  # its place in the report and in the question table
    files: tuple[UpstreamFile, ...]  # what it reads, in the order it reads them
    modules: dict[str, tuple[str, ...]]  # module -> its tasks, in report order
    load: Callable[[LocalPath], list[Question]]
    citation: str
    licence: str
    scorers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # task -> its own
    primary: str = "genegpt"  # its headline metric (the first scorer of most tasks)
    # Tasks run only where a run names them (toy samples, other groups' sets).
    samples: tuple[str, ...] = ()
    in_bank: bool = False  # compared with GeneTuring and GeneHop (the question bank section)
    # Its figure over all its questions (LAB-Bench's, as its peers report it), where
    # the others take the mean of their task means.
    pooled: bool = False
    multiple_choice: bool = False  # its questions have choices (methods.choices)
    family: str | None = None  # benchmarks also scored together (LAB-Bench's: "labbench")
    # Tasks whose every question needs files only their source had (LABBench2's figures):
    # answered by imported runs alone; a live run asks the other tasks' askable questions.
    imported_only: tuple[str, ...] = ()
    # The multiple-choice variant its questions are asked in whatever the method says
    # (BixBench's: its own prompts and published order); None: the method's ``choices``.
    choice_variant: str | None = None

    @property
    def tasks(self) -> list[str]:
        return [task for tasks in self.modules.values() for task in tasks]

    def module_of(self, task: str) -> str | None:
        return next((m for m, tasks in self.modules.items() if task in tasks and m), None)


@cache
def registry() -> dict[str, Benchmark]:
    """Every benchmark of this package's modules, by name, in report order."""
    found: list[Benchmark] = []
    for module in pkgutil.iter_modules(__path__):
        declared = importlib.import_module(f"{__name__}.{module.name}").BENCHMARKS
        found += declared
    names = [b.name for b in found]
    if len(names) != len(set(names)):
        raise RuntimeError(f"two benchmarks share a name: {names}")
    return {b.name: b for b in sorted(found, key=lambda b: b.order)}


def names() -> list[str]:
    return list(registry())


def get(name: str) -> Benchmark:
    try:
        return registry()[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(registry())}") from None


def tasks_of(benchmark: str) -> list[str]:
    """A benchmark's task names, in report order."""
    return get(benchmark).tasks


def module_of(task: str, benchmark: str = "geneturing") -> str | None:
    """A task's module (GeneTuring's as the paper groups them, a BioRAGent task's
    folder, a LAB-Bench subtask's family), else None."""
    return get(benchmark).module_of(task)


def all_tasks() -> list[str]:
    """Every task name of every benchmark (``scoring.tasks`` keys), each once."""
    return list(dict.fromkeys(t for b in registry().values() for t in b.tasks))


def is_sample(task: str) -> bool:
    """A task run only when a run names it (a toy sample, another group's sets)."""
    return task in _samples()


@cache
def _samples() -> frozenset[str]:
    return frozenset(t for b in registry().values() for t in b.samples)


def task_by_slug(benchmark: str, slug: str) -> str:
    for task in tasks_of(benchmark):
        if slugify(task) == slug:
            return task
    raise KeyError(f"benchmark {benchmark!r} has no task with slug {slug!r}")


def default_task_scorers() -> dict[str, list[str]]:
    """The scorers each benchmark gives its own tasks (scoring's defaults)."""
    found: dict[str, list[str]] = {}
    for benchmark in registry().values():
        for task, scorers in benchmark.scorers.items():
            found.setdefault(task, list(scorers))
    return found


def bank() -> list[str]:
    """The benchmarks compared with GeneTuring and GeneHop (the question bank)."""
    return [b.name for b in registry().values() if b.in_bank]


def question_files() -> list[UpstreamFile]:
    """Every upstream file the question table is built from."""
    return [f for b in registry().values() for f in b.files]


def load_all(local_path: LocalPath) -> list[Question]:
    """The whole question table; ``local_path(file)``: where an upstream file lies."""
    questions = [q for b in registry().values() for q in b.load(local_path)]
    return link_overlaps(questions, bank())


def local_question_table(mirror: Path | None) -> list[Question] | None:
    """The question table from the files at hand (the mirror's, else the fetched
    copies), or None where one is missing: for ``helixbench plan`` before a run."""
    from ..paths import upstream_path

    def local(file) -> Path:
        return mirror / file.relpath if mirror else Path(upstream_path(file))

    if not all(local(file).is_file() for file in question_files()):
        return None
    return load_all(local)


def write_question_table(path: Path) -> int:
    """The whole question table, from the local copies of the upstream files, written
    to ``path``; returns the number of questions."""
    from ..paths import upstream_path

    questions = load_all(lambda file: Path(upstream_path(file)))
    write_questions(questions, path)
    return len(questions)
