"""What a finished workflow prints last: where the report is and the top of each
leaderboard, read from the report's own CSV files (so it says what the files say)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..exports.provenance import built_from
from ..tables.headline import headline_sentence
from ..text import fmt, fmt_bracket

TOP = 3  # runs shown per leaderboard


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _number(text: str):
    return float(text) if text not in ("", None) else None


def console_summary(report_dir: Path) -> str:
    """The report's paths, the headline differences and the top runs of each board."""
    report_dir = Path(report_dir)
    lines = [f"helixbench: the report is in {report_dir}/"]
    provenance = report_dir / "provenance.json"
    if provenance.is_file():
        lines.append("  " + built_from(json.loads(provenance.read_text(encoding="utf-8"))))
    lines += [
        f"  {report_dir / 'index.html'}  (open in a browser; no server needed)",
        f"  {report_dir / 'report.md'}  (the same tables as text)",
    ]
    headline = _rows(report_dir / "headline.csv")
    if headline:
        lines.append("Who wins, by how much:")
        for row in headline:
            numbers = {k: _number(row[k]) for k in ("difference", "ci_low", "ci_high", "p_value")}
            numbers |= {k: _number(row[k]) for k in ("macro_a", "macro_b")}
            lines.append(f"  {row['benchmark']}: " + headline_sentence({**row, **numbers}, fmt))
    board = [r for r in _rows(report_dir / "leaderboard.csv") if r["metric"] == "extracted"]
    for benchmark in dict.fromkeys(r["benchmark"] for r in board):
        lines.append(f"Leaderboard, {benchmark} (macro, extracted answers; 95% interval):")
        for r in [r for r in board if r["benchmark"] == benchmark][:TOP]:
            partial = (
                f", {r['scored']} of {r['compared']} questions, {r['tasks']} of "
                f"{r['benchmark_tasks']} tasks"
                if r["partial"] == "True"
                else ""
            )
            rank = f"{r['rank']}." if r["rank"] else "apart:"
            lines.append(
                f"  {rank} {r['run']}  {fmt(_number(r['score']))} "
                f"{fmt_bracket(_number(r['ci_low']), _number(r['ci_high']))}{partial}"
            )
    sets = _rows(report_dir / "genesets_leaderboard.csv")
    if sets:
        encoders = "; ".join(dict.fromkeys(r["scored_by"] for r in sets if r["scored_by"]))
        lines.append(
            f"Leaderboard, gene sets (embedding similarity by {encoders or 'its encoder'}; "
            "95% interval; ranked only among runs on the same sets):"
        )
        for group in dict.fromkeys(r["compared_on"] for r in sets):
            lines.append(f"  on {group}:")
            for r in [r for r in sets if r["compared_on"] == group][:TOP]:
                lines.append(
                    f"    {r['rank']}. {r['run']}  {fmt(_number(r['embedding']))} "
                    + fmt_bracket(_number(r["embedding_ci_low"]), _number(r["embedding_ci_high"]))
                )
    bank = _rows(report_dir / "question_bank_leaderboard.csv")
    for benchmark in dict.fromkeys(r["benchmark"] for r in bank):
        lines.append(
            f"Leaderboard, {benchmark} (macro of each task's primary score; 95% interval; "
            "scorer, questions scored of asked):"
        )
        of = [r for r in bank if r["benchmark"] == benchmark]
        for r in [r for r in of if r["rank"]][:TOP] + [r for r in of if not r["rank"]]:
            lines.append("  " + bank_line(r))
    return "\n".join(lines)


def bank_line(r: dict) -> str:
    """A question-bank leaderboard row in one line: rank (or apart, with what it
    covers), score, interval, scorer, questions scored of asked, and a degenerate
    run's empty and unreadable replies."""
    interval = fmt_bracket(_number(r["ci_low"]), _number(r["ci_high"]))
    covers = f"{r['scored']} of {r['asked']} asked"
    if r["rank"]:
        head = f"{r['rank']}. {r['run']}"
    else:
        head = (
            f"apart (on {r['scored']} of the {r['compared']} questions compared, "
            f"{r['tasks']} of {r['benchmark_tasks']} tasks): {r['run']}"
        )
    flags = [
        f"{fmt(100 * _number(r[k]))}% {what}"
        for k, what in (("empty", "empty replies"), ("unparsed", "replies without an answer"))
        if _number(r.get(k)) and _number(r[k]) >= 0.05
    ]
    extra = f"; {', '.join(flags)}" if flags else ""
    return f"{head}  {fmt(_number(r['macro']))} {interval} ({r['scorer']}; {covers}{extra})"
