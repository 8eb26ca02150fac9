"""Recorded runs in GeneGPT's format, and which ones upstream holds.

A recording file is a list of ``[question, gold, final_text, steps]`` with
``steps`` a list of ``[prompt_sent, completion]``. The tool replies are not
stored separately: each one is the text the next prompt appended after
``<completion>->[``, which :func:`recorded_tool_replies` recovers (also when the
next prompt was cut at the front).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .benchmarks import tasks_of
from .methods.genegpt import extract_url
from .upstream import GENEGPT_COMMIT, GENEGPT_REPO, UpstreamFile, listdir

RECORDINGS = {
    # name -> where its runs lie; GeneTuring runs are ``geneturing_results/<mask>/``,
    # GeneHop runs ``genehop_results/<name>_<mask>/``.
    "genegpt-2023": {
        "repo": GENEGPT_REPO,
        "commit": GENEGPT_COMMIT,
        "model": "code-davinci-002",
        "dirs": {"geneturing": "geneturing_results/", "genehop": "genehop_results/"},
        # The snapshot a method names "genegpt-2023" (the full mask embeds all 7 replies).
        "snapshot": ("geneturing", "111111", "Gene alias"),
    },
}


@dataclass(frozen=True)
class RecordedItem:
    question: str
    gold: object
    final_text: str
    steps: list[tuple[str, str]]


@dataclass(frozen=True)
class RecordedRun:
    """One recorded task file: its upstream file and the mask it was run with."""

    recording: str
    benchmark: str
    task: str
    mask: str
    run_dir: str  # e.g. "geneturing_results/001001"
    file: UpstreamFile


def load_recording(path: Path) -> list[RecordedItem]:
    data = json.loads(Path(path).read_text())
    return [
        RecordedItem(q, gold, final, [tuple(s) for s in steps]) for q, gold, final, steps in data
    ]


def recorded_runs(recording: str, benchmark: str, mask: str | None) -> list[RecordedRun]:
    """Every task file upstream recorded for ``mask`` (None: any mask) on ``benchmark``."""
    try:
        spec = RECORDINGS[recording]
    except KeyError:
        raise KeyError(f"unknown recording {recording!r}; known: {', '.join(RECORDINGS)}") from None
    prefix = spec["dirs"][benchmark]
    known = set(tasks_of(benchmark))
    runs = []
    for f in listdir(spec["repo"], spec["commit"], prefix):
        run_dir, _, name = f.path.rpartition("/")
        task = name.removesuffix(".json")
        dir_mask = re.search(r"([01]{6})$", run_dir)
        if dir_mask and mask in (None, dir_mask.group(1)) and task in known:
            runs.append(RecordedRun(recording, benchmark, task, dir_mask.group(1), run_dir, f))
    return runs


@cache
def snapshot_run(recording: str) -> RecordedRun:
    """The recorded run whose header is the named snapshot ``recording``."""
    benchmark, mask, task = RECORDINGS[recording]["snapshot"]
    (run,) = [r for r in recorded_runs(recording, benchmark, mask) if r.task == task]
    return run


def recorded_header(items: list[RecordedItem]) -> str:
    """The header of a recorded run: its first prompt up to ``Question: <question>``."""
    for item in items:
        if item.steps:
            prompt, suffix = item.steps[0][0], f"Question: {item.question}\n"
            if not prompt.endswith(suffix):
                raise ValueError(f"first prompt of {item.question!r} does not end with it")
            return prompt[: -len(suffix)]
    raise ValueError("the recording has no model call to read a header from")


def recorded_tool_replies(item: RecordedItem) -> dict[int, tuple[str, str | None]]:
    """``{step index: (url, rendered reply)}`` for each call a recorded completion asked for.

    The reply is None where the recording cannot show it: the call after the
    last logged step (numError, lengthError) or a reply cut by front truncation.
    """
    replies: dict[int, tuple[str, str | None]] = {}
    for i, (prompt, completion) in enumerate(item.steps):
        url = extract_url(completion)
        if url is None:
            continue
        rendered = None
        if i + 1 < len(item.steps):
            rendered = _appended_reply(prompt, completion, item.steps[i + 1][0])
        replies[i] = (url, rendered)
    return replies


def _appended_reply(prompt: str, completion: str, next_prompt: str) -> str | None:
    lead = prompt + completion + "->["
    if not next_prompt.endswith("]\n"):
        return None
    if next_prompt.startswith(lead):
        return next_prompt[len(lead) : -2]
    at = next_prompt.rfind(completion + "->[")  # the next prompt was cut at the front
    if at < 0:
        return None
    reply = next_prompt[at + len(completion) + 3 : -2]
    return reply if (lead + reply + "]\n").endswith(next_prompt) else None
