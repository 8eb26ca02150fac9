"""What ``snakemake`` prints while helixbench's jobs run: a Snakemake logger plugin
(``snakemake_logger_plugin_helixbench``, named by the default profile's ``logger``).

Snakemake's own console prints every job's inputs, outputs and reason: the main job's
99 jobs made 1,400 lines, one of them 9,000 characters. Its ``--quiet`` settings
either keep that or drop progress altogether, so helixbench prints its own: one line
for the job counts, a line as each stage (rule) finishes its jobs, at most one
progress line every 30 seconds, every warning and error in full (a failed job with
its log, as Snakemake shows it), and the ending. A run shard's own progress lines
reach the console from its job. Everything Snakemake would have printed is still in
its log (``.snakemake/log/``); a dry run (``-n``), ``--verbose``, ``--printshellcmds``
or ``HELIXBENCH_CONSOLE=full`` prints it all as Snakemake does.

A package of its own, not a module of helixbench: Snakemake imports every logger plugin
it finds as it starts, before the workflow puts its checkout's code on the path, and an
import of helixbench here would pin the installed copy for the whole run.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import time

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

# Seconds between two overall progress lines (a stage finishing prints anyway).
PROGRESS_INTERVAL_S = float(os.environ.get("HELIXBENCH_CONSOLE_INTERVAL", "30"))
# Snakemake's info lines that tell a user nothing the summary lines do not.
ROUTINE = re.compile(
    r"^(Building DAG of jobs|Using shell:|Provided (cores|resources)|Rules claiming more "
    r"threads|Select jobs to execute|Execute \d+ jobs|Assuming unrestricted shared "
    r"filesystem|Conda environments: ignored|Singularity containers: ignored|"
    r"Using workflow specific profile|Job stats:|"
    r"Config file \S+ is (extended|replaced) by additional config)"
)
# Snakemake's word that Ctrl-C (or a SIGINT) stops the run, and what helixbench says.
INTERRUPTED = "Terminating processes on user request"
INTERRUPT_LINE = (
    "interrupted: stopping the jobs; each run keeps the questions it finished, and "
    "`snakemake` again resumes where they stopped"
)
# An error raised by the workflow's own code (a config it refuses): Snakemake heads it
# with the rule file and line that raised it and ends it with that frame; the user
# needs the message alone, which names their file and key.
OWN_ERROR = re.compile(
    r'^\w*Error in file "?[^"\n]*/workflow/(rules/\S+\.smk|Snakefile)"?, line \d+:\n'
)
STAGES = {  # a rule's jobs, all done, as the console says it
    "fetch_upstream": "upstream files fetched",
    "fetch_benchmarks": "benchmark files fetched",
    "questions": "question bank written",
    "recorded_snapshot": "demonstration snapshots read",
    "live_snapshot": "live snapshots taken",
    "seed_tool_cache": "tool caches seeded",
    "prepare_local_model": "local models prepared",
    "original_env": "environments built",
    "prepare_original": "seed systems prepared",
    "peer_templates": "peer prompts read",
    "build_index": "corpus indexes built",
    "run_shard": "run shards done",
    "score_batch": "score batches done (runs scored and summarized)",
    "export_run": "runs exported",
}
MAX_LINE = 240


class LogHandler(LogHandlerBase):
    """The console as helixbench prints it (module docstring)."""

    def __post_init__(self) -> None:
        settings = self.common_settings
        self.full = bool(
            settings.dryrun
            or settings.verbose
            or settings.printshellcmds
            or getattr(settings, "debug_dag", False)
            or os.environ.get("HELIXBENCH_CONSOLE") == "full"
        )
        self.stream = sys.stdout if getattr(settings, "stdout", False) else sys.stderr
        from snakemake.logging import DefaultFilter, DefaultFormatter

        quiet = settings.quiet or set()
        self.formatter_ = DefaultFormatter(quiet, settings.show_failed_logs)
        self.filter_ = DefaultFilter(
            quiet, settings.debug_dag, settings.verbose, settings.dryrun, settings.printshellcmds
        )
        self.interrupted = False  # Ctrl-C: each stopped job's failure goes unsaid
        self.totals: dict[str, int] = {}
        self.done: dict[str, int] = {}
        self.rule_of: dict[int, str] = {}
        self.printed_at = time.monotonic()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.full:
                if self.filter_.filter(record):
                    self._write(self.formatter_.format(record))
                return
            for line in self.lines(record):
                self._write(line)
        except Exception:  # a console line is never worth a failed workflow
            self.handleError(record)

    def lines(self, record: logging.LogRecord) -> list[str]:
        """What ``record`` shows on the console (often nothing)."""
        event = getattr(record, "event", None)
        message = record.getMessage() if record.msg is not None else ""
        if message.startswith(INTERRUPTED):
            self.interrupted = True
            stop_jobs()
            return [f"{_clock()} {INTERRUPT_LINE}"]
        if self.interrupted and record.levelno >= logging.ERROR:
            return []  # (the jobs it stopped, one by one: said above in one line)
        if event == LogEvent.ERROR and OWN_ERROR.match(message):
            return [own_error(record.getMessage())]
        if event in (LogEvent.JOB_ERROR, LogEvent.GROUP_ERROR, LogEvent.ERROR):
            return [self.formatter_.format(record)]
        if record.levelno >= logging.WARNING:
            return [self.formatter_.format(record) if event else record.getMessage()]
        if event == LogEvent.WORKFLOW_STARTED:
            files = ", ".join(str(f) for f in getattr(record, "configfiles", None) or [])
            return [f"helixbench: Snakemake {record.snakemake_version}; config {files}"]
        if event == LogEvent.RUN_INFO:
            return self._counts(dict(record.stats))
        if event == LogEvent.JOB_INFO:
            self.rule_of[record.jobid] = record.rule_name
            return []
        if event == LogEvent.JOB_FINISHED:
            return self._finished(record.job_id)
        if event == LogEvent.PROGRESS:
            return self._progress(record.done, record.total)
        if event is not None:
            return []
        if not message.strip() or ROUTINE.match(message.strip()):
            return []
        return [message]

    def _counts(self, stats: dict) -> list[str]:
        stats.pop("total", None)
        stats.pop("all", None)  # (the target, not work)
        total = sum(stats.values())
        self.totals = {rule: count for rule, count in stats.items()}
        parts = ", ".join(f"{rule} {count}" for rule, count in stats.items())
        return [_cut(f"{total} jobs to run ({parts})")]

    def _finished(self, job_id: int) -> list[str]:
        rule = self.rule_of.pop(job_id, None)
        if rule is None or rule not in self.totals:
            return []
        self.done[rule] = self.done.get(rule, 0) + 1
        if self.done[rule] != self.totals[rule]:
            return []
        self.printed_at = time.monotonic()
        if rule == "report":  # (the ending says where it is)
            return [f"{_clock()} report written"]
        return [f"{_clock()} {STAGES.get(rule, f'{rule} jobs done')}: {self.totals[rule]}"]

    def _progress(self, done: int, total: int) -> list[str]:
        now = time.monotonic()
        if now - self.printed_at < PROGRESS_INTERVAL_S or done >= total:
            return []
        self.printed_at = now
        running = [
            f"{rule} {self.done.get(rule, 0)}/{count}"
            for rule, count in self.totals.items()
            if 0 < self.done.get(rule, 0) < count
        ]
        detail = f" ({', '.join(running)})" if running else ""
        # The counts line leaves out the target rule (`all`): so does this one.
        work = sum(self.totals.values()) or total
        return [_cut(f"{_clock()} {min(done, work)} of {work} jobs done{detail}")]

    def _write(self, text: str) -> None:
        if text:
            self.stream.write(text.rstrip("\n") + "\n")  # one write: never split by a job's line
            self.stream.flush()


def stop_jobs() -> None:
    """Interrupt the jobs Snakemake is running (each its process tree, as Ctrl-C in a
    terminal does): on a SIGINT to Snakemake alone it would wait for them to finish,
    minutes for a run shard; interrupted, a job keeps what it finished and ends."""
    try:
        import psutil
        from snakemake.shell import shell
    except ImportError:
        return
    with shell._lock:
        running = list(shell._processes.values())
    for process in running:
        try:  # (the job's shell, often replaced by its command, and what it started)
            job = psutil.Process(process.pid)
            tree = [job, *job.children(recursive=True)]
        except psutil.Error:
            continue
        for child in tree:
            try:
                child.send_signal(signal.SIGINT)
            except psutil.Error:
                pass


def own_error(message: str) -> str:
    """A workflow error's own words, without the rule file's heading and frame."""
    body = OWN_ERROR.sub("", message, count=1).splitlines()
    return "\n".join(line for line in body if not line.startswith("  File ")).strip()


def _clock() -> str:
    return time.strftime("[%H:%M:%S]")


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def yaml_problem(path) -> str | None:
    """Where a YAML file fails to parse, as a person reads it: ``FILE, line L, column C:
    what is wrong`` (None where it parses)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as text:
            yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        return f"{where}: {exc.problem or exc.context}"
    except (OSError, yaml.YAMLError):
        return None
    return None


def _locate_config_errors() -> None:
    """Snakemake says of a config file it cannot parse only that it is not valid JSON or
    YAML; said here with the file, line and column, and what is wrong there. (Snakemake
    imports this plugin as it starts, before it reads any config file.)"""
    try:
        from snakemake.common import configfile
        from snakemake.exceptions import WorkflowError
    except ImportError:  # another Snakemake's layout: its own message stands
        return
    original = configfile._load_configfile
    if getattr(original, "helixbench", False):
        return

    def load(configpath_or_obj, filetype="Config"):
        try:
            return original(configpath_or_obj, filetype)
        except WorkflowError as exc:
            where = None
            if isinstance(configpath_or_obj, str | os.PathLike) and "not valid" in str(exc):
                where = yaml_problem(configpath_or_obj)
            if where is None:
                raise
            # (said at once, in one line: Snakemake would add its own heading and frame)
            print(f"invalid config: {where}", file=sys.stderr)
            raise SystemExit(1) from None

    load.helixbench = True
    configfile._load_configfile = load


_locate_config_errors()
