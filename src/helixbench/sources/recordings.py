"""Recorded runs in GeneGPT's format, which ones upstream holds, and the loop each used.

A recording file is a list of ``[question, gold, final_text, steps]`` with
``steps`` a list of ``[prompt_sent, completion]``. The tool replies are not
stored separately: each one is the text the next prompt appended after
``<completion>->[``, which :func:`recorded_tool_replies` recovers (also when the
next prompt was cut at the front).

Upstream's recordings come from more than one version of its loop: some stop
with ``numError`` after 5 model calls instead of 10, and some call a URL only when
the completion ends with it (:mod:`helixbench.genegpt_format`, ``url_rule``).
:func:`infer_loop` reads the variant off the files themselves, so a replay of any
recorded run, mirrored or not, uses the loop that made it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..benchmarks import tasks_of
from ..datasets.jsonfiles import read_json
from ..datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, UpstreamFile, listdir
from ..genegpt_format import MASK, URL_RULES, extract_url

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
        # The loop each run used is read off its files (infer_loop), not typed here.
        "loop": "inferred",
    },
}
# Final texts upstream's loop writes instead of an answer. Both end a question whose
# last logged completion called a URL: numError at the call cap, lengthError when the
# prompt grown by that call's reply was refused.
LOOP_ERRORS = ("lengthError", "numError")


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
    data = read_json(path)
    return [
        RecordedItem(q, gold, final, [tuple(s) for s in steps]) for q, gold, final, steps in data
    ]


def recorded_runs(recording: str, benchmark: str, mask: str | None) -> list[RecordedRun]:
    """Every task file upstream recorded for ``mask`` (None: any mask) on ``benchmark``."""
    try:
        spec = RECORDINGS[recording]
    except KeyError:
        raise KeyError(f"unknown recording {recording!r}; known: {', '.join(RECORDINGS)}") from None
    if benchmark not in spec["dirs"]:  # a benchmark upstream never ran
        return []
    prefix = spec["dirs"][benchmark]
    known = set(tasks_of(benchmark))
    runs = []
    for f in listdir(spec["repo"], spec["commit"], prefix):
        run_dir, _, name = f.path.rpartition("/")
        task = name.removesuffix(".json")
        dir_mask = re.search(rf"({MASK})$", run_dir)
        if dir_mask and mask in (None, dir_mask.group(1)) and task in known:
            runs.append(RecordedRun(recording, benchmark, task, dir_mask.group(1), run_dir, f))
    return runs


def local_recorded_files(
    recording: str, benchmark: str, mask: str, mirror: Path, tasks=None
) -> list[tuple[str, str]]:
    """A mask's recorded files (of ``tasks``, default all) copied from ``mirror`` to
    where the workflow's jobs read them, ``resources/upstream/`` below the working
    directory, each checked against its pin: (task, local path) per file."""
    from .. import paths
    from ..datasets.fetch import fetch
    from ..paths import upstream_path

    files = []
    for run in recorded_runs(recording, benchmark, mask):
        if tasks is None or run.task in tasks:
            local = Path(upstream_path(run.file))
            fetch(run.file.url, local, run.file.sha256, Path(mirror), Path(paths.UPSTREAM_LOCK))
            files.append((run.task, str(local)))
    return files


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


def recorded_tool_replies(
    item: RecordedItem, url_rule: str = "first"
) -> dict[int, tuple[str, str | None]]:
    """``{step index: (url, rendered reply)}`` for each call a recorded completion asked
    for under ``url_rule`` (the rule the recording was made with: :func:`infer_loop`).

    The reply is None where the recording cannot show it: the call after the
    last logged step (numError, lengthError) or a reply cut by front truncation.
    """
    replies: dict[int, tuple[str, str | None]] = {}
    for i, (prompt, completion) in enumerate(item.steps):
        url = extract_url(completion, url_rule)
        if url is None:
            continue
        rendered = None
        if i + 1 < len(item.steps):
            rendered = _appended_reply(prompt, completion, item.steps[i + 1][0])
        replies[i] = (url, rendered)
    return replies


@dataclass(frozen=True)
class RecordedLoop:
    """The loop variant one recorded file shows.

    ``max_calls`` is the call cap (None where no question reached it: any cap at
    least the longest question replays alike); ``url_rule`` the rule that explains
    which completions called a URL; ``evidence`` what they were read from.
    """

    max_calls: int | None
    url_rule: str
    evidence: dict

    def settings(self) -> dict:
        """The GeneGPT method settings that replay this recording."""
        out = {"url_rule": self.url_rule}
        if self.max_calls is not None:
            out["max_calls"] = self.max_calls
        return out


def _loop_evidence(items: list[RecordedItem]) -> dict:
    """What one file shows of its loop: calls, the steps of questions stopped at the cap,
    the longest question, and per URL rule the completions it gets wrong (a call the
    recording shows as a final answer, or the reverse)."""
    contradictions = dict.fromkeys(URL_RULES, 0)
    capped, longest, calls = set(), 0, 0
    for item in items:
        steps = len(item.steps)
        longest, calls = max(longest, steps), calls + steps
        if item.final_text == "numError":
            capped.add(steps)
        for i, (_, completion) in enumerate(item.steps):
            called = i < steps - 1 or item.final_text in LOOP_ERRORS
            for rule in URL_RULES:
                contradictions[rule] += (extract_url(completion, rule) is not None) != called
    return {
        "questions": len(items),
        "calls": calls,
        "longest": longest,
        "capped_at": sorted(capped),
        "contradictions": contradictions,
    }


def _explaining_rules(evidence: dict) -> list[str]:
    return [r for r in URL_RULES if evidence["contradictions"][r] == 0]


def _loop_from(evidence: dict, url_rule: str | None, max_calls: int | None) -> RecordedLoop:
    if url_rule is None:  # no rule explains every completion: the one wrong least often
        url_rule = min(URL_RULES, key=lambda r: evidence["contradictions"][r])
    return RecordedLoop(max_calls, url_rule, evidence)


def infer_loop(files: dict[str, list[RecordedItem]]) -> dict[str, RecordedLoop]:
    """The loop variant of each file of one recorded run (e.g. one mask's task files).

    A file shows its URL rule where the two rules disagree on one of its
    completions, and its call cap where a question stopped with ``numError`` (the
    cap is that question's number of calls). A file that leaves either open takes
    what its run's other files agree on; where they disagree, each file keeps what
    it shows alone (``first`` and no cap where it shows nothing: upstream's final
    loop). Returns ``{file name: RecordedLoop}``.
    """
    evidence = {name: _loop_evidence(items) for name, items in files.items()}
    shared_rules = set(URL_RULES)
    for ev in evidence.values():
        shared_rules &= set(_explaining_rules(ev))
    caps = {c for ev in evidence.values() for c in ev["capped_at"]}
    longest = max((ev["longest"] for ev in evidence.values()), default=0)
    run_cap = None
    if len(caps) == 1 and longest <= min(caps):  # one cap, and no question went past it
        run_cap = min(caps)
    run_rule = "first" if "first" in shared_rules else next(iter(shared_rules), None)
    loops = {}
    for name, ev in evidence.items():
        rules = _explaining_rules(ev)
        if run_rule is not None:
            rule = run_rule
        else:
            rule = "first" if "first" in rules else (rules[0] if rules else None)
        cap = ev["capped_at"][0] if len(ev["capped_at"]) == 1 else None
        if cap is None and run_cap is not None and not ev["capped_at"]:
            cap = run_cap
        loops[name] = _loop_from(ev, rule, cap)
    return loops


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


class RecordingReader:
    """Recorded files read once per process, with the loop variant of each."""

    def __init__(self):
        self._items: dict[str, list[RecordedItem]] = {}
        self._loops: dict[str, RecordedLoop] = {}

    def items(self, path: str | Path) -> list[RecordedItem]:
        key = str(path)
        if key not in self._items:
            self._items[key] = load_recording(Path(path))
        return self._items[key]

    def loop(self, path: str | Path, group: list[str] | None = None) -> RecordedLoop:
        """The loop ``path`` was recorded with, read off it and ``group`` (every file of
        its recorded run)."""
        key = str(path)
        if key not in self._loops:
            files = dict.fromkeys([*(group or []), key])
            self._loops.update(infer_loop({f: self.items(f) for f in files}))
        return self._loops[key]


def loop_table(mirror: Path | None) -> list[dict]:
    """Every recorded run the registry knows, with the loop variant its files show
    (read from ``mirror``, else the local copies): one row per run directory."""
    from ..datasets.fetch import mirror_path
    from ..paths import upstream_path

    reader, rows = RecordingReader(), []
    for name, spec in RECORDINGS.items():
        for benchmark in spec["dirs"]:
            by_dir: dict[str, list] = {}
            for run in recorded_runs(name, benchmark, None):
                by_dir.setdefault(run.run_dir, []).append(run)
            for run_dir, runs in by_dir.items():
                local = [
                    mirror_path(r.file.url, mirror) if mirror else Path(upstream_path(r.file))
                    for r in runs
                ]
                group = [str(p) for p in local if p.is_file()]
                row = {"recording": name, "run": run_dir, "tasks": len(runs), "read": len(group)}
                if group:
                    loops = [reader.loop(path, group) for path in group]
                    row["variants"] = sorted({(lp.max_calls, lp.url_rule) for lp in loops}, key=str)
                    row["capped_at"] = sorted({c for lp in loops for c in lp.evidence["capped_at"]})
                    row["contradictions"] = {
                        r: sum(lp.evidence["contradictions"][r] for lp in loops) for r in URL_RULES
                    }
                rows.append(row)
    return rows
