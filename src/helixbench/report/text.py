"""How the report writes values: numbers to 3 significant digits, free text safe in Markdown."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd


def fmt(value) -> str:
    """A value as every table of the report shows it: a fraction or a small number to 3
    significant digits (0.829, 0.0556, 12.5; intervals alike), from 100 up a whole
    number (1,235), a count as it is, a missing value blank. The CSV files keep 7
    decimals."""
    if value is None or isinstance(value, str):
        return value or ""
    if pd.isna(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    value = float(value)
    if value == 0:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:#.3g}"


# What a table shows where no interval is given (too few questions: helixbench.stats).
NO_INTERVAL = "too few to tell"


def _given(value) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))


def counted(n: int, noun: str) -> str:
    """``n`` and its noun, in the plural unless one: "1 question", "9 questions"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def fmt_interval(low, high) -> str:
    """An interval as every table prints it: ``0.803 – 0.854`` (a dash with spaces:
    ``0-0.335`` reads as a negative number); on too few questions, it says so."""
    if not (_given(low) and _given(high)):
        return NO_INTERVAL
    return f"{fmt(low)} – {fmt(high)}"


def fmt_bracket(low, high) -> str:
    """An interval after its value: ``[0.803, 0.854]``, or ``(too few to tell)``."""
    if not (_given(low) and _given(high)):
        return f"({NO_INTERVAL})"
    return f"[{fmt(low)}, {fmt(high)}]"


def as_published(value) -> str:
    """A paper's own figure with the 2 decimals it was published with (never padded to
    a precision the paper did not state)."""
    return "" if value is None or pd.isna(value) else f"{float(value):.2f}"


def fmt_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every number as :func:`fmt` writes it (for a table a person reads)."""
    shown = frame.astype(object)
    for column in frame.columns:
        shown[column] = [v if isinstance(v, str) else fmt(v) for v in frame[column]]
    return shown


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()!|#~])")


def md_escape(value) -> str:
    """``value`` as literal text in Markdown: one line, its markup characters
    backslash-escaped and HTML's ``<``, ``>``, ``&`` as entities (Markdown passes raw
    HTML through)."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


# Past this many rows a table of report.md or index.html shows its first rows and
# says where all of them are (its CSV file): a sweep's per-task tables have tens of
# thousands, and a page or a text that long is read by no one.
MAX_ROWS = 200
MAX_COLUMNS = 40


def md_table(frame: pd.DataFrame, empty: str = "none", csv: str | None = None) -> str:
    """``frame`` as a Markdown table, numbers by :func:`fmt`; past :data:`MAX_ROWS`
    rows or :data:`MAX_COLUMNS` columns the first ones (:func:`bounded`) and a line
    naming ``csv``, the file with all of them."""
    if frame is None or frame.empty:
        return empty
    frame, cut = bounded(frame)
    where = f" in `{csv}`" if csv else " in its CSV file"
    more = f"\n\nShown: {', '.join(cut)}; all{where}." if cut else ""
    shown = fmt_frame(frame)
    # A cell's text is text: HTML in it (a field of an imported file) is shown, never
    # passed through by a Markdown renderer; a | would end the cell.
    shown = shown.apply(lambda column: column.map(_md_cell))
    return shown.to_markdown(index=False, disable_numparse=True) + more


def md_section(intro: str, parts: dict[str, str], tables: dict, shown) -> str:
    """A section of ``report.md``: ``intro``, then each table of ``tables`` named in
    ``parts`` that has rows, under its text there (``{rows}``: how many), as
    ``shown(name, table)`` gives it and naming its CSV file."""
    out = [intro]
    for name, text in parts.items():
        table = tables[name]
        if not table.empty:
            out.append(
                text.format(rows=len(table)) + md_table(shown(name, table), csv=f"{name}.csv")
            )
    return "\n\n".join(out)


def _md_cell(value):
    """A cell's text as Markdown shows it literally (one already escaped by
    :func:`md_escape` unchanged)."""
    if not isinstance(value, str):
        return value
    text = re.sub(r"&(?!#?\w+;)", "&amp;", value).replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"(?<!\\)\|", r"\\|", text).replace("\n", " ")


def bounded(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` cut to :data:`MAX_ROWS` rows and :data:`MAX_COLUMNS` columns (the
    layouts with a column per run), and what was cut, in words."""
    cut = []
    if len(frame) > MAX_ROWS:
        cut.append(f"the first {MAX_ROWS} of {len(frame):,} rows")
        frame = frame.head(MAX_ROWS)
    if len(frame.columns) > MAX_COLUMNS:
        cut.append(f"the first {MAX_COLUMNS} of {len(frame.columns):,} columns")
        frame = frame.iloc[:, :MAX_COLUMNS]
    return frame, cut
