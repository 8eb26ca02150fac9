"""Where a run's scoring stands, kept beside its scores. A score job writes a run's files
(scores, judge calls, summary) under a staging folder and moves them in place only
when that run is done, so a failed one keeps every earlier file; it leaves a note
(``<scores>.failed.json``: when, and its error's last line) that ``helixbench status``
shows with the earlier scores it kept."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .progress import clock


def failure_note(scores: Path) -> Path:
    return Path(scores).with_name(Path(scores).name.removesuffix(".jsonl") + ".failed.json")


@contextlib.contextmanager
def staged_outputs(scores: Path, finals: list[Path], root: Path):
    """Yield final path -> where to write it (under ``root``, by its own relative path);
    on success move each in place (and drop an earlier failure's note), on failure drop
    them and write the note beside ``scores``."""
    staged = {
        final: root / Path(*Path(final).parts[Path(final).is_absolute() :]) for final in finals
    }
    shutil.rmtree(root, ignore_errors=True)
    for path in staged.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield staged
    except BaseException as exc:
        shutil.rmtree(root, ignore_errors=True)
        error = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        note = {"failed_at": time.time(), "error": f"{type(exc).__name__}: {error}"[:500]}
        failure_note(scores).parent.mkdir(parents=True, exist_ok=True)
        failure_note(scores).write_text(json.dumps(note) + "\n")
        raise
    for final, path in staged.items():
        Path(final).parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.replace(final)
        else:  # (a job that had none to write: none kept from before either)
            Path(final).unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)
    for parent in list(root.parents)[:2]:  # (its method's and model's, once empty)
        try:
            parent.rmdir()
        except OSError:
            break
    failure_note(scores).unlink(missing_ok=True)


@dataclass
class ScoringState:
    run: str
    state: str  # scored, not scored, failed
    detail: str


def scoring_states(plan, now: float | None = None) -> list[ScoringState]:
    """Per planned run: scored (its summary is there), not scored yet, or failed (the
    last score job's error, and whether earlier scores are kept)."""
    now = time.time() if now is None else now
    states = []
    for run in plan.runs:
        scores, summary = Path(run.score_path), Path(run.summary_path)
        note = failure_note(scores)
        kept = (
            f"scores of {clock(max(0, now - scores.stat().st_mtime))} ago kept"
            if scores.is_file()
            else ""
        )
        if note.is_file():
            failed = json.loads(note.read_text())
            detail = f"{clock(max(0, now - failed['failed_at']))} ago: {failed['error']}"
            states.append(
                ScoringState(run.label, "failed", "; ".join(filter(None, [detail, kept])))
            )
        elif summary.is_file():
            states.append(ScoringState(run.label, "scored", kept))
        else:
            states.append(ScoringState(run.label, "not scored", kept))
    return states


def format_scoring_states(states: list[ScoringState]) -> str:
    from tabulate import tabulate

    rows = [[s.run, s.state, s.detail] for s in states]
    return tabulate(rows, headers=["run", "scoring", "detail"], disable_numparse=True)
