"""Progress of run shards: a line per update in the job's log, and a summary of every
shard of a working directory (``helixbench status``).

A run job's log is a file (Snakemake redirects it; a SLURM job's log too), where a
progress bar redrawn in place with carriage returns turns into one unreadable line.
So the shard's tqdm bar writes whole lines, each a complete state: questions done of
the shard's total, model calls, tool calls, errors so far, elapsed time, ETA. Beside
the shard's ``.partial`` file it keeps ``<shard>.progress.json`` (replaced atomically
at each update): the shard's total and when it started, which the records alone do
not tell. ``helixbench status`` reads both and writes nothing, so it never disturbs a
running job (a line torn by a write in progress is ignored, never truncated).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import paths
from ..datasets.jsonfiles import decompressed
from ..transcripts import complete_lines, first_of_each_question, shard_output

# Seconds between two progress lines at most once a second's work is done; every
# question of a slow model (seconds or minutes each) gets its line.
INTERVAL_S = float(os.environ.get("HELIXBENCH_PROGRESS_INTERVAL", "10"))
SIDECAR_SUFFIX = ".progress.json"
# tqdm puts ", " before the postfix itself. The pace and the ETA are helixbench's
# (ShardProgress.pace), not tqdm's: from the questions after this job's first, since
# the first also pays for loading the model and encoding the prompt's header.
BAR_FORMAT = "{desc}: {n_fmt}/{total_fmt} questions ({percentage:.0f}%){postfix}"


def sidecar_path(output: Path) -> Path:
    return Path(output).with_name(Path(output).name + SIDECAR_SUFFIX)


# Seconds between two lines on the console (where several jobs' lines meet), apart
# from a shard's first and last.
CONSOLE_INTERVAL_S = float(os.environ.get("HELIXBENCH_CONSOLE_INTERVAL", "30"))


class _Lines:
    """A stream for tqdm that turns each redraw into one whole line, written to the
    job's log and, sparser, to the console (when the job has one apart from its log)."""

    def __init__(self, stream, console=None):
        self.stream, self.console = stream, console
        self.last = None
        self.console_at = None  # when the console last got a line
        self.flush_console = False  # the next line goes to the console whatever the time

    def write(self, text: str) -> None:
        for part in text.replace("\r", "\n").split("\n"):
            part = " ".join(part.split())  # tqdm pads its rate
            if part and part != self.last:
                self.stream.write(part + "\n")
                self.last = part
                self._to_console(part)
        self.stream.flush()

    def _to_console(self, line: str) -> None:
        now = time.monotonic()
        due = self.console_at is None or now - self.console_at >= CONSOLE_INTERVAL_S
        if self.console is not None and (due or self.flush_console):
            self.console.write(f"[progress] {line}\n")
            self.console.flush()
            self.console_at, self.flush_console = now, False

    def flush(self) -> None:
        self.stream.flush()


def log_to_file(path: Path):
    """Send this process's standard output and error (its own logging and every
    library's prints) to the log file ``path``, and return a stream to where its
    standard error went before: the console that progress lines go to."""
    sys.stdout.flush()
    sys.stderr.flush()
    console = os.fdopen(os.dup(2), "w", buffering=1)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return console


@dataclass
class Counts:
    """What a shard's records tell: questions done, model and tool calls, errors."""

    done: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    errors: int = 0

    def add(self, record: dict) -> None:
        self.done += 1
        for event in record.get("events", ()):
            if event.get("type") == "model":
                self.model_calls += 1
            elif event.get("type") == "tool":
                self.tool_calls += 1
        self.errors += bool(record.get("error"))


class ShardProgress:
    """A run shard's progress: a tqdm bar of whole lines on ``stream`` (the job's log)
    and the sidecar file ``helixbench status`` reads."""

    def __init__(
        self,
        label: str,
        output: Path,
        total: int,
        records: list[dict],
        stream=None,
        console=None,
        imported: bool = False,
    ):
        self.imported = imported  # answers read from a source's files: no model is called
        self.counts = Counts()
        for record in records:  # resumed: what earlier attempts did counts too
            self.counts.add(record)
        self.failed = 0  # questions the model server failed on (not recorded)
        self.total = total
        self.started = time.monotonic()
        self.answered = 0  # questions this job answered
        self.first_at = None  # when this job's first question was done
        self.sidecar = sidecar_path(output)
        self.state = {
            "label": label,
            "total": total,
            "resumed_from": self.counts.done,
            "started_at": time.time(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        from tqdm import tqdm  # here: scoring and status import this module, not tqdm

        self.lines = _Lines(stream or sys.stderr, console)

        self.bar = tqdm(
            total=total,
            initial=self.counts.done,
            desc=label,
            file=self.lines,
            mininterval=INTERVAL_S,
            miniters=1,
            bar_format=BAR_FORMAT,
            unit="question",
            dynamic_ncols=False,
            ascii=True,
            postfix=self._postfix(),
        )
        self._write_sidecar()

    def _postfix(self) -> str:
        c = self.counts
        if self.imported:
            text = f"answers imported {c.done}, no model called, errors {c.errors}"
        else:
            text = f"model calls {c.model_calls}, tool calls {c.tool_calls}, errors {c.errors}"
        if self.failed:
            text += f", {self.failed} failed on the model server (not recorded)"
        return f"{text} | {self.pace()}"

    def pace(self, now: float | None = None) -> str:
        """Elapsed time, ETA and rate: ``elapsed 01:17, ETA 00:17, 8.8 s/question``
        (``ETA ?`` until the rate is known: a second question done)."""
        now = time.monotonic() if now is None else now
        text = f"elapsed {_clock(now - self.started)}"
        left = self.total - self.counts.done
        if left <= 0:  # done: the rate over the whole job
            spent = now - self.started
            return f"{text}, ETA 00:00" + (
                f", {_rate(self.answered / spent)}" if self.answered and spent > 0 else ""
            )
        if self.first_at is None or self.answered < 2 or now <= self.first_at:
            return f"{text}, ETA ?"
        rate = (self.answered - 1) / (now - self.first_at)  # questions a second
        return f"{text}, ETA {_clock(left / rate)}, {_rate(rate)}"

    def question_done(self, record: dict) -> None:
        self.answered += 1
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.counts.add(record)
        self.bar.set_postfix_str(self._postfix(), refresh=False)
        self.bar.update(1)
        self._write_sidecar()

    def question_failed(self) -> None:
        self.failed += 1
        self.bar.set_postfix_str(self._postfix())
        self._write_sidecar()

    def close(self, finished: bool) -> None:
        self.lines.flush_console = True  # the console sees how the shard ended
        self.bar.close()  # shows the last state, whatever the interval
        if finished:  # the shard's output holds it all now
            self.sidecar.unlink(missing_ok=True)

    def _write_sidecar(self) -> None:
        state = {**self.state, **asdict(self.counts), "updated_at": time.time()}
        tmp = self.sidecar.with_name(f"{self.sidecar.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state) + "\n")
        tmp.replace(self.sidecar)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return (
        f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
        if hours
        else f"{rest // 60:02d}:{rest % 60:02d}"
    )


def _rate(per_second: float) -> str:
    if per_second >= 10:
        return f"{per_second:,.0f} questions/s"
    if per_second >= 1:
        return f"{per_second:.1f} questions/s"
    return f"{1 / per_second:.1f} s/question"


# --- helixbench status -------------------------------------------------------------


@dataclass
class ShardStatus:
    run: str  # "model / method"
    shard: str  # "0 of 2" (shards count from 0, as their files do)
    state: str  # done, running, or stopped (resumes on the next run)
    done: int
    total: int | None
    model_calls: int
    tool_calls: int
    errors: int
    s_per_question: float | None
    eta_s: float | None
    updated_s_ago: float | None
    path: str


def read_counts(path: Path) -> Counts:
    """The counts of a shard file, read as a resuming job reads it (a last line torn by
    a write in progress is left out) but only read: the file is never changed."""
    counts = Counts()
    for record in first_of_each_question(complete_lines(decompressed(path.read_bytes(), path))[0]):
        counts.add(record)
    return counts


def _alive(state: dict) -> bool:
    if state.get("host") != socket.gethostname():
        return True  # another node's job: its sidecar's age tells
    try:
        os.kill(int(state["pid"]), 0)
    except (OSError, KeyError, ValueError):
        return False
    return True


def planned_shards(plan) -> list[tuple[str, str]]:
    """Every shard a plan runs, in its order: (``model / method``, output path under
    ``results/runs``)."""
    return [(run.label, path) for run in plan.runs for path in run.shard_paths()]


def shard_statuses(
    runs_dir: Path, now: float | None = None, planned: list[tuple[str, str]] | None = None
) -> list[ShardStatus]:
    """Every shard under ``runs_dir`` (``results/runs``): finished (its output), in
    progress or stopped (its ``.partial`` file and sidecar); with ``planned`` (from
    :func:`planned_shards`) also each planned shard not started yet, in the plan's
    order, before the shards on disk that the plan does not name."""
    found = _found_statuses(Path(runs_dir), time.time() if now is None else now)
    if planned is None:
        return found
    by_output = {str(shard_output(Path(s.path))): s for s in found}
    statuses = []
    for label, output in planned:
        path = str(Path(runs_dir) / Path(output).relative_to(paths.RUNS_DIR))
        shard, shards = Path(output).name.split(".jsonl")[0].split("-")[1::2]
        status = by_output.pop(path, None) or ShardStatus(
            label, f"{shard} of {shards}", "not started", 0, None, 0, 0, 0, None, None, None, path
        )
        statuses.append(status)
    return statuses + list(by_output.values())


def _found_statuses(runs_dir: Path, now: float) -> list[ShardStatus]:
    statuses = []
    for path in sorted(Path(runs_dir).glob("*/*/*/shard-*-of-*.jsonl*")):
        name = path.name
        if name.endswith((".jsonl.zst", ".jsonl")):  # (.jsonl: an earlier version's)
            partial = False
        elif name.endswith(".jsonl.partial"):
            partial = True
        else:
            continue
        _, shard, _, shards = name.split(".jsonl")[0].split("-")  # shard-1-of-2
        output = shard_output(path)
        if partial and output.exists():
            continue  # finished since: the output counts
        counts = read_counts(path)
        state, total, rate, eta, age = "done", counts.done, None, None, None
        if partial:
            sidecar = sidecar_path(output)
            info = {}
            if sidecar.exists():
                try:
                    info = json.loads(sidecar.read_text())
                except (OSError, json.JSONDecodeError):
                    pass  # replaced while read: the next call reads it
            total = info.get("total")
            age = now - info["updated_at"] if "updated_at" in info else None
            state = "running" if info and _alive(info) else "stopped"
            new = counts.done - info.get("resumed_from", counts.done)
            if new > 0 and "started_at" in info:
                rate = (info["updated_at"] - info["started_at"]) / new
                if total is not None and state == "running":  # (a stopped shard: none)
                    eta = rate * (total - counts.done)
        statuses.append(
            ShardStatus(
                run=f"{path.parent.parent.parent.name} / {path.parent.parent.name}",
                shard=f"{shard} of {shards}",
                state=state,
                done=counts.done,
                total=total,
                model_calls=counts.model_calls,
                tool_calls=counts.tool_calls,
                errors=counts.errors,
                s_per_question=rate,
                eta_s=eta,
                updated_s_ago=age,
                path=str(path),
            )
        )
    return statuses


def clock(seconds: float | None) -> str:
    """A duration as h:mm:ss ("" for none)."""
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def format_statuses(statuses: list[ShardStatus]) -> str:
    from tabulate import tabulate

    rows = [
        [
            s.run,
            s.shard,
            s.state,
            f"{s.done}/{s.total if s.total is not None else '?'}",
            s.model_calls,
            s.tool_calls,
            s.errors,
            f"{s.s_per_question:.1f}" if s.s_per_question is not None else "",
            clock(s.eta_s),
            f"{clock(s.updated_s_ago)} ago" if s.updated_s_ago is not None else "",
        ]
        for s in statuses
    ]
    headers = ["run", "shard", "state", "questions", "model calls", "tool calls", "errors"]
    headers += ["s/question", "ETA", "updated"]
    totals = [sum(getattr(s, k) for s in statuses) for k in ("done", "model_calls")]
    footer = (
        f"{len(statuses)} shard(s): "
        + ", ".join(
            f"{sum(s.state == k for s in statuses)} {k}"
            for k in ("done", "running", "stopped", "not started")
        )
        + f"; {totals[0]} questions and {totals[1]} model calls recorded"
    )
    return tabulate(rows, headers=headers, disable_numparse=True) + "\n" + footer
