"""How the report writes values: scores to two decimals, free text safe in Markdown."""

from __future__ import annotations

import re

import pandas as pd


def fmt(value) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.2f}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()!|#~])")


def md_escape(value) -> str:
    """``value`` as literal text in Markdown: one line, its markup characters
    backslash-escaped and HTML's ``<``, ``>``, ``&`` as entities (Markdown passes raw
    HTML through)."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)
