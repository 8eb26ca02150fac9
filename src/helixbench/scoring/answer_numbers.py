"""The numbers an answer states, read as a careful grader reads them.

- Signs and dashes: the Unicode minus (and the figure, en and em dashes, the small and
  full-width hyphen-minus) before a digit is a minus; "minus 5" is -5; a dash between
  two numbers is a range ("5-10": 5 and 10).
- Thousands separators (``1,234,567``; thin and no-break spaces between groups of three)
  and scientific notation (``1.2e-5``, ``1.2 × 10^-5``, ``1.2x10⁻⁵``).
- Number words ("three", "twenty-one", "two point five"), by ``text2num``.
- Not a number the answer states: one inside a URL or a bare web address
  (``researchgate.net/publication/371971592_...``), a DOI, a PubMed or PMC id, a
  citation (``[3]``, ``[1-4]``, ``(Smith et al., 2020)``), or one that is part of an
  identifier (``rs12345``, ``chr8``, ``ERX2290523``, ``GSE1234``); a unit written
  against the number (``5bp``, ``37°C``, ``12%``) is no identifier.
"""

from __future__ import annotations

import re

DASHES = "\u2212\u2012\u2013\u2014\ufe63\uff0d"  # minus, figure, en, em, small, full-width
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
NOT_STATED = [
    re.compile(r"(?i)\b(?:https?|ftp)://\S+"),
    re.compile(r"(?i)\bwww\.\S+"),
    re.compile(r"(?i)\b(?:[a-z0-9-]+\.)+[a-z]{2,}/\S*"),  # a bare address with a path
    re.compile(r"(?i)\bdoi:?\s*10\.\d{4,9}/\S+|\b10\.\d{4,9}/\S+"),
    re.compile(r"(?i)\b(?:pmid|pmcid|pubmed id)\s*:?\s*(?:pmc)?\d+|\bPMC\d+"),
    re.compile(r"\[\s*\d+(?:\s*[-,–]\s*\d+)*\s*\]"),  # [3], [1-4], [2, 5]
    re.compile(r"\([^()]*\bet al\.?,?\s*(?:19|20)\d{2}[a-z]?\)"),  # (Smith et al., 2020)
    re.compile(r"\((?:[A-Z][\w'-]+(?:\s+(?:and|&)\s+[A-Z][\w'-]+)?),?\s+(?:19|20)\d{2}[a-z]?\)"),
]
RANGE = re.compile(rf"(?<=\d)\s*[-{DASHES}]\s*(?=\d)")
MINUS = re.compile(rf"[{DASHES}](?=\s?\d|\.\d)|(?i:\bminus\s+)(?=\d|\.\d)")
SCIENTIFIC = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:[×xX*·]|\\times)\s*10\s*(?:\^|\*\*)?\s*\{?\s*([-+]?\d+)\s*\}?"
)
THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:(?:,|\u2009|\u202f|\u00a0)\d{3})+(?![\d,]\d)")
UNITS = r"(?:bp|kb|mb|nt|aa|kda|da|fold|x|h|hr|min|s|ms|mm|um|µm|nm|mg|ug|µg|ng|ml|ul|µl|m|k)"
NUMBER = re.compile(
    r"(?<![\w.\-+/#])([-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)"
    rf"(?=$|[^\w/]|(?i:{UNITS})(?![\w/]))"
)


def plain(text: str) -> str:
    """``text`` with what is no stated number taken out and the rest written plainly
    (module docstring): what :func:`stated_numbers` reads."""
    for pattern in NOT_STATED:
        text = pattern.sub(" ", text)
    text = text.translate(SUPERSCRIPTS)
    text = SCIENTIFIC.sub(lambda m: f"{m[1]}e{m[2]}", text)
    text = RANGE.sub(" to ", text)
    text = MINUS.sub("-", text)
    text = THOUSANDS.sub(lambda m: re.sub(r"[^\d]", "", m[0]), text)
    from text_to_num import alpha2digit  # (here: only a score job reads answers)

    try:
        text = alpha2digit(text, "en", threshold=0)
    except Exception:  # (an odd text it cannot tokenise: its words stay words)
        pass
    return MINUS.sub("-", text)


def stated_numbers(text: str) -> list[float]:
    """Every number ``text`` states, in order (repeats kept)."""
    return [float(found) for found in NUMBER.findall(plain(text or ""))]
