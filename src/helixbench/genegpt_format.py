"""GeneGPT's text protocol: how a completion asks for a URL, and how replies show.

A completion asks for a tool call by writing a URL in brackets; the reply is
appended to the prompt as ``<completion>->[<rendered reply>]``. Upstream's
recordings come from two versions of its loop, which differ in what counts as a
call (``url_rule``):

- ``first`` (upstream's final ``main.py``): any bracketed URL anywhere in the
  completion; the first one is called;
- ``last`` (the rule left commented out in its first ``main.py``): a call only
  when the completion ends with ``]``, the URL being the text after the last
  ``[``; a completion that merely mentions a URL is a final answer.

Either way spaces in the URL are replaced by ``+``. This module is the one home
of the format: the method builds prompts with it, and the recordings, the replay
tools and the tool-cache seeding read prompts back with it.
"""

from __future__ import annotations

import ast
import re

URL_PATTERN = re.compile(r"\[(https?://[^\[\]]+)\]")
# The ``last`` rule: the completion's last character is ``]`` and the text after its
# last ``[`` is a URL.
LAST_URL_PATTERN = re.compile(r"\[(https?://[^\[\]]+)\]\Z")
URL_RULES = ("first", "last")
RID_PATTERN = re.compile(r"RID = (.*)\n")
# A BLAST request id as NCBI issues them (11 letters and digits today).
RID_SHAPE = re.compile(r"^[A-Z0-9]{6,32}$")
# A prompt mask: six digits 0/1, Dc.1 Dc.2 Dm.1-4 (every use writes it with this).
MASK = r"[01]{6}"
MASK_PATTERN = re.compile(rf"^{MASK}$")


def check_mask(mask: str) -> str:
    """``mask`` if it is six digits of 0/1 (Dc.1 Dc.2 Dm.1-4); else ValueError."""
    if not isinstance(mask, str) or not MASK_PATTERN.match(mask):
        raise ValueError(f"a GeneGPT mask is six digits of 0/1 (Dc.1 Dc.2 Dm.1-4), got {mask!r}")
    return mask


def check_url_rule(rule: str) -> str:
    if rule not in URL_RULES:
        raise ValueError(f"url_rule: {rule!r} is not one of {', '.join(URL_RULES)}")
    return rule


def extract_url(completion: str, rule: str = "first") -> str | None:
    """The URL ``completion`` asks for under ``rule``, spaces replaced by ``+``;
    None when the completion is a final answer."""
    if rule == "first":
        urls = URL_PATTERN.findall(completion)
        url = urls[0] if urls else None
    elif rule == "last":
        match = LAST_URL_PATTERN.search(completion)
        url = match.group(1) if match else None
    else:
        check_url_rule(rule)
    return url.replace(" ", "+") if url else None


def is_blast_put(url: str) -> bool:
    return "blast" in url and "Put" in url


def blast_rid(value: bytes | str) -> str | None:
    """The request id a BLAST Put's reply holds: NCBI's page (``RID = ...``), or, for a
    reply seeded from a recording, the id alone as GeneGPT's loop rendered it; None
    when it holds none (an error, another page)."""
    if isinstance(value, bytes):
        match = RID_PATTERN.search(value.decode("utf-8", "replace"))
        return match.group(1) if match else None
    text = value.strip()
    return text if RID_SHAPE.match(text) else None


def blast_put_page(rid: str) -> str:
    """The part of NCBI's reply to a BLAST Put that clients read (``RID = ...``,
    ``RTOE = ...``), for a Put seeded from a recording, which keeps only the RID."""
    return f"<!--QBlastInfoBegin\n    RID = {rid}\n    RTOE = 0\nQBlastInfoEnd\n-->\n"


def render_reply(url: str, value: bytes | str, cap: int | None) -> str:
    """How a reply appears in the prompt: ``repr`` of the bytes (cut to ``cap``), or plain text.

    A BLAST Put reply shows as its RID alone. Text values (an RID already taken
    out, a tool error) show as they are.
    """
    if isinstance(value, bytes) and is_blast_put(url):
        value = blast_rid(value) or "Error: no RID in the BLAST Put reply"
    if cap is not None:
        value = value[:cap]
    return value if isinstance(value, str) else repr(value)


def parse_rendered_reply(text: str) -> bytes | str:
    """Invert :func:`render_reply`: a ``b'...'`` repr back to bytes, anything else as text."""
    if text[:2] in ("b'", 'b"'):
        try:
            value = ast.literal_eval(text)
        except (SyntaxError, ValueError):
            value = None
        if isinstance(value, bytes) and repr(value) == text:
            return value
    return text
