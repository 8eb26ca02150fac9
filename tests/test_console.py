"""helixbench's console for Snakemake (snakemake_logger_plugin_helixbench, the default profile's
logger): the job counts, a line per finished stage, warnings and errors in full,
Snakemake's routine lines and job blocks left to its log; a dry run as Snakemake
prints it."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

from snakemake_interface_logger_plugins.common import LogEvent

from snakemake_logger_plugin_helixbench import LogHandler


def _handler(**settings) -> tuple[LogHandler, io.StringIO]:
    common = SimpleNamespace(
        **{"dryrun": False, "verbose": False, "printshellcmds": False, "debug_dag": False,
           "quiet": set(), "show_failed_logs": True, "stdout": False, "nocolor": True, **settings}
    )  # fmt: skip
    handler = LogHandler(common, None)
    handler.stream = io.StringIO()
    return handler, handler.stream


def _record(msg, level=logging.INFO, **extra) -> logging.LogRecord:
    record = logging.LogRecord("snakemake", level, __file__, 1, msg, None, None)
    record.__dict__.update(extra)
    return record


def _job(jobid: int, rule: str) -> logging.LogRecord:
    fields = {
        "event": LogEvent.JOB_INFO, "jobid": jobid, "rule_name": rule, "rule_msg": None,
        "local": True, "input": ["x" * 9000], "output": ["y"], "log": [], "benchmark": None,
        "wildcards": {}, "reason": "Missing output files", "resources": {}, "priority": 0,
        "threads": 1, "indent": False, "is_checkpoint": False, "printshellcmd": True,
        "is_handover": False, "shellcmd": "",
    }  # fmt: skip
    return _record(f" Rule: {rule}, Jobid: {jobid}", **fields)


def test_a_run_shows_counts_stages_and_errors_and_leaves_the_rest_to_the_log(tmp_path):
    handler, out = _handler()
    stats = {"fetch_upstream": 2, "report": 1, "all": 1, "total": 4}
    log = tmp_path / "report.log"
    log.write_text("Traceback: the report failed\n")
    error = {
        "event": LogEvent.JOB_ERROR, "rule_name": "report", "rule_msg": None,
        "jobid": 3, "input": ["a"], "output": ["b"], "log": [str(log)], "conda_env": None,
        "shellcmd": "python -m helixbench report", "aux": {}, "indent": False,
    }  # fmt: skip
    records = [
        _record("Building DAG of jobs..."),
        _record("Job stats:\n...", event=LogEvent.RUN_INFO, stats=stats),
        _record("Select jobs to execute..."),
        _job(1, "fetch_upstream"),
        _job(2, "fetch_upstream"),
        _record("Finished jobid: 1", event=LogEvent.JOB_FINISHED, job_id=1),
        _record(None, event=LogEvent.PROGRESS, done=1, total=4),
        _record("Finished jobid: 2", event=LogEvent.JOB_FINISHED, job_id=2),
        _record("a rule's warning", level=logging.WARNING),
        _job(3, "report"),
        _record("Error in rule report, jobid: 3", level=logging.ERROR, **error),
        _record("Complete log(s): /w/.snakemake/log/x.log"),
    ]
    for record in records:
        handler.emit(record)
    lines = out.getvalue().splitlines()
    assert lines[0] == "3 jobs to run (fetch_upstream 2, report 1)"
    assert lines[1].endswith("] upstream files fetched: 2")
    assert lines[2] == "a rule's warning"
    assert lines[4] == "Error in rule report:"
    assert "python -m helixbench report" in out.getvalue()
    assert "Traceback: the report failed" in out.getvalue()  # its log, shown
    assert lines[-1] == "Complete log(s): /w/.snakemake/log/x.log"
    assert "Building DAG" not in out.getvalue() and "x" * 300 not in out.getvalue()


def test_a_dry_run_is_printed_as_snakemake_prints_it():
    handler, out = _handler(dryrun=True)
    handler.emit(_record("Building DAG of jobs..."))
    handler.emit(_job(1, "fetch_upstream"))
    text = out.getvalue()
    assert "Building DAG of jobs..." in text and "rule fetch_upstream:" in text
