"""The HTML report (``results/report/index.html``): one light page with its styles,
script and figures (inline SVG) inside, so it opens from disk with no server and no
network; each run's questions are a file of their own the page loads when asked
(:mod:`..run_share.details`). Rendered with a jinja2 template (``templates/report.html.j2``) with
autoescaping on: model output and tool replies are shown as text, never as markup.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from ..text import bounded, fmt, fmt_frame, fmt_interval

TEMPLATES = Path(__file__).parent / "templates"


def html_table(frame: pd.DataFrame | None, csv: str | None = None) -> Markup:
    """A table as the page shows it: numbers by :func:`fmt`, in a box of its own that
    scrolls sideways when the table is wider than the screen; past the rows or
    columns a page shows (:func:`helixbench.report.text.bounded`) the first ones and a
    line naming ``csv``, the file with all of them; nothing
    (a false value, so the page leaves the section out) for an empty one."""
    if frame is None or frame.empty:
        return Markup("")
    frame, cut = bounded(frame)
    where = f" in <code>{escape(csv)}</code>" if csv else " in the report's CSV files"
    more = f'<p class="small">Shown: {", ".join(cut)}; all{where}.</p>' if cut else ""
    table = fmt_frame(frame).to_html(index=False, escape=True, border=0)
    return Markup(f'<div class="table-wrap">{table}</div>{more}')


def inline_code(text: str) -> Markup:
    """A caption written for report.md as the page shows it: escaped, its `code` spans
    as <code> (one text for both, so they cannot drift apart)."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


def inline_svg(path: Path) -> Markup:
    text = path.read_text()
    text = re.sub(r"^<\?xml[^>]*>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    return Markup(text)


def write_html(out: Path, context: dict) -> None:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )
    html = env.get_template("report.html.j2").render(fmt=fmt, fmt_interval=fmt_interval, **context)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
