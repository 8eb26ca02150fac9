"""The graded answer fenced in a judge's prompt: data the answer cannot close or add to.

A benchmark's grading prompt pastes the answer as it is (LABBench2's and BixBench's
do): an answer can then end its own section, add a second ``## EVALUATION ##`` or a
``Target Answer:`` line, or carry the verdict tags the judge is read by. Fenced, the
answer lies between a pair of tags named for it (``<submitted_answer_<id>>``, the id
a digest of the answer, so the same answer is the same prompt and its cached call
replays), and in it, before that:

- each line that repeats a line of the prompt's own (a section marker, a label), or
  looks like one (``## ... ##``, ``### ...``, ``Expected answer:``, ``Target Answer:``)
  is marked as quoted (``> `` before it, its ``#`` made full-width);
- every tag a judge is read by, or that could close the fence (``<grade>``,
  ``<result>``, ``<answer>``, ``<submitted_answer...>``), has its angle brackets made
  the look-alikes ``‹ ›``.

This changes the upstream prompt's text where an answer holds such a line or tag (most
answers are unchanged but for the fence), as Inspect's scorers guard their data block.
``scoring.judge.fence: false`` pastes the answer as upstream does, byte for byte; each
judge call's record says which (``fenced``).
"""

from __future__ import annotations

import hashlib
import re

TAGS = re.compile(
    r"<\s*(/?)\s*(grade|result|verdict|answer|rationale|submitted_answer\w*)\b([^>]*)>", re.I
)
MARKER = re.compile(
    r"(?i)^\s*(?:#{1,6}\s.*|#{2,}.*#{2,}|-{3,}|(?:expected|target|correct|ground truth|submitted|"
    r"reference)\s+answer\s*:.*|(?:question|rationale|result|evaluation|grade)\s*:.*)\s*$"
)


def fence(answer: str, template: str = "") -> str:
    """``answer`` as it goes into a judge's prompt (module docstring)."""
    own = {line.strip() for line in template.splitlines() if line.strip() and "{" not in line}
    lines = []
    for line in (answer or "").splitlines() or [""]:
        if line.strip() in own or MARKER.match(line):
            line = "> " + line.replace("#", "＃")
        lines.append(TAGS.sub(lambda m: f"‹{m[1]}{m[2]}{m[3]}›", line))
    name = "submitted_answer_" + hashlib.sha256((answer or "").encode()).hexdigest()[:12]
    return f"<{name}>\n" + "\n".join(lines) + f"\n</{name}>"
