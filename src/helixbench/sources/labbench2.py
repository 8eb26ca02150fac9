"""LABBench2's reports (its paper's runs, or a user's own run of its harness): which
system a report is, how its retries merge, and its figures as LABBench2 states them.

A pinned report lies at ``assets/reports_paper/<tag>/<mode>/<system>[@flags][_retry]*.json``:
``<system>`` a maker's model (``gpt-5-2``), ``@flags`` the harness's agent flags
(``tools,high``: web search, code execution and web fetch, high effort), each
``_retry`` a rerun of the ids that failed before. Its ``model`` field names the
maker's model as the harness ran it (``native:openai:gpt-5.2@tools,high``).

Merging is LABBench2's own (``evals/summarize_report.py``): later files win, a case
supersedes a failure of the same id, a failure counts only where no file completed
its id. A case is correct where its ``HybridEvaluator`` value is 1.0; accuracy is
correct / (completed + failed), attempted accuracy correct / completed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..datasets.upstream import UpstreamFile, listdir, verified_bytes
from ..digests import sha256_file
from .checks import check_file, labbench2_report

REPORT_STEM = re.compile(r"^(?P<system>[^@]+?)(?:@(?P<flags>[^_]+))?(?P<retries>(?:_retry)*)$")
GRADER = "LABBench2's HybridEvaluator (its validators; its judge, claude-sonnet-4-5)"


def parse_stem(stem: str) -> tuple[str, str, int]:
    """(system, flags, retries) of a report file's stem."""
    found = REPORT_STEM.match(stem)
    if found is None:
        raise ValueError(f"not a LABBench2 report's name: {stem!r}")
    return found["system"], found["flags"] or "", found["retries"].count("_retry")


def system_files(repo: str, commit: str, prefix: str, system: str, flags: str) -> dict[str, list]:
    """Task (``tag/mode``) -> the pinned reports of ``system`` with ``flags``, in the
    order LABBench2 merges them (the run, then each retry)."""
    found: dict[str, list] = {}
    for file in listdir(repo, commit, prefix):
        tag, mode, name = PurePosixPath(file.path).relative_to(prefix).parts
        of, with_flags, retries = parse_stem(PurePosixPath(name).stem)
        if (of, with_flags) == (system, flags):
            found.setdefault(f"{tag}/{mode}", []).append((retries, file))
    return {
        task: [f for _, f in sorted(files, key=lambda p: p[0])] for task, files in found.items()
    }


def pinned_reports(system: str, flags: str) -> dict[str, list[UpstreamFile]]:
    """Task -> the paper's reports of ``system`` with ``flags`` (:func:`system_files`)."""
    from ..benchmarks.labbench2 import COMMIT, REPO, REPORTS

    return system_files(REPO, COMMIT, REPORTS, system, flags)


def local_reports(reports: dict, format_name: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """A user's own reports (task -> a path or paths, in the order its retries came)
    as (absolute path, sha256) pairs: the digests shape the run's identity. Each file
    is checked as its format must be (:mod:`.checks`) before it counts."""
    found = {}
    for task, given in reports.items():
        files = [
            Path(f).expanduser().resolve() for f in ([given] if isinstance(given, str) else given)
        ]
        for file in files:
            check_file(format_name, file)
        found[task] = tuple((str(f), sha256_file(f)) for f in files)
    return found


def read_merged(reports) -> dict:
    """(path, sha256) pairs of one system, task and flags, read (each checked against
    its digest) and merged (:func:`merge`), with ``usage`` summed over every file (a
    retry's calls cost too)."""
    datas = [labbench2_report(Path(path), verified_bytes(path, sha256)) for path, sha256 in reports]
    merged = merge(datas)
    usage: dict[str, int] = {}
    for data in datas:
        for key, value in (data.get("usage") or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                usage[key] = usage.get(key, 0) + value
    merged["usage"] = usage
    return merged


def maker(model: str) -> dict:
    """What a report's ``model`` field says: the harness's runner, the maker, the model,
    its flags (``native:openai-completions:gpt-5.2@tools,high``)."""
    name, _, flags = model.partition("@")
    parts = name.split(":")
    runner = parts[0] if len(parts) > 2 else ""
    provider, model_name = (parts[-2], parts[-1]) if len(parts) >= 2 else ("", parts[-1])
    return {"runner": runner, "provider": provider, "model": model_name, "flags": flags}


def merge(reports: list[dict]) -> dict:
    """Reports of one system, tag and mode as LABBench2's summarize_report.py merges
    them: ``cases`` and ``failures`` by id, the rest of the first report."""
    cases: dict[str, dict] = {}
    failures: dict[str, dict] = {}
    base: dict = {}
    for data in reports:
        if not base:
            base = {k: v for k, v in data.items() if k not in ("cases", "failures", "summary")}
        for case in data.get("cases", []):
            if case.get("id"):
                cases[case["id"]] = case
                failures.pop(case["id"], None)
        for failure in data.get("failures", []):
            if failure.get("id") and failure["id"] not in cases:
                failures[failure["id"]] = failure
    return {**base, "cases": list(cases.values()), "failures": list(failures.values())}


def correct(case: dict) -> bool:
    """LABBench2's verdict on a case: its HybridEvaluator value is 1.0."""
    return _value(case) == 1.0


def verdict(case: dict) -> dict:
    """A case's published verdict: its value and its grader's reason (a case the
    report gives no score counts as wrong, as summarize_report.py counts it)."""
    score = (case.get("scores") or {}).get("HybridEvaluator")
    if not isinstance(score, dict):
        return {"value": 0, "reason": "the report gives it no score", "grader": GRADER}
    return {"value": _value(case), "reason": score.get("reason"), "grader": GRADER}


def _value(case: dict):
    return ((case.get("scores") or {}).get("HybridEvaluator") or {}).get("value", 0)


@dataclass(frozen=True)
class Figures:
    """A merged report's counts and its two accuracies, as summarize_report.py states
    them (a type's, or the whole report's)."""

    completed: int
    correct: int
    failed: int

    @property
    def total(self) -> int:
        return self.completed + self.failed

    @property
    def incorrect(self) -> int:
        return self.completed - self.correct

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def attempted(self) -> float:
        return self.correct / self.completed if self.completed else 0.0


def figures(merged: dict) -> dict[str, Figures]:
    """Per type (as LABBench2 keys them: ``""`` for a tag of no types) and ``"total"``."""
    counts: dict[str, list[int]] = {}
    for case in merged["cases"]:
        of = counts.setdefault(case.get("type", "unknown"), [0, 0, 0])
        of[0] += 1
        of[1] += correct(case)
    for failure in merged["failures"]:
        counts.setdefault(failure.get("type", "unknown"), [0, 0, 0])[2] += 1
    found = {kind: Figures(*c) for kind, c in counts.items()}
    found["total"] = Figures(*(sum(c[i] for c in counts.values()) for i in range(3)))
    return found
