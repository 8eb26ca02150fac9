"""The report: every table, figure and text under ``results/report/``.

Each run's share is computed in its own job as the run finishes
(:mod:`.run_share.run_summary`: its per-question table, its rows of the tables, the
facts of its records, its questions for the HTML page); the report joins those small
files (:mod:`.joined`, in the order :mod:`.build` gives), so a sweep of a thousand runs
is reported in minutes, and adding a run recomputes that run and the join. Rerunning
on the same results gives the same numbers.

The modules live in rooms by what they produce, each importing only those below it:
:mod:`.page` (what a reader reads), :mod:`.exports` (what other tools read),
:mod:`.run_share` (a run's share), :mod:`.tables` (one module per table), and at the
ground the per-question scores as read and written (:mod:`.records`,
:mod:`.question_scores`; :mod:`.store`, the runs' tables read a run at a time and
never held whole) and how values are written (:mod:`.text`).

The package loads nothing until a name is asked for: a score job, which writes a
run's share, imports only what that share needs, not the join's every table.
"""

from __future__ import annotations

from importlib import import_module

# name -> the module that defines it
_LAZY = {
    "write_report": ".build",
    "load_scores": ".records",
    "primary_metric": ".records",
    "score_index": ".records",
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_LAZY[name], __name__), name)
