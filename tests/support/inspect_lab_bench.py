"""inspect_evals' own LAB-Bench tasks (lab_bench_dbqa, lab_bench_seqqa,
lab_bench_cloning_scenarios), run by Inspect
in the peer's environment on the pinned public rows: its Hugging Face download is
replaced by the same rows read as a local dataset (the tasks' files in name order),
nothing else; its seeds, template, solver and scorer are its own. Writes each task's
every sample as the task's dataset holds it (its choices in the order drawn, its
target), and, run on MODEL (``--limit``: the first N samples of each task), its
status, metrics and per-sample verdicts (C, I or N), as JSON.

    python inspect_lab_bench.py LAB_BENCH_DIR DbQA,SeqQA,CloningScenarios MODEL OUT.json
        [--max-connections N] [--limit N]
"""

import argparse
import json
from pathlib import Path

import inspect_ai
import inspect_ai.dataset
from inspect_evals.lab_bench import lab_bench

TASKS = {
    "DbQA": lab_bench.lab_bench_dbqa,
    "SeqQA": lab_bench.lab_bench_seqqa,
    "CloningScenarios": lab_bench.lab_bench_cloning_scenarios,
}


def local_rows(folder: Path):
    files = [str(p) for p in sorted(folder.glob("*-v1-public.jsonl"))]

    def hf_dataset(path, name, split, **kwargs):  # the task's own arguments, but the source
        kwargs.pop("revision", None)
        return inspect_ai.dataset.hf_dataset("json", split=split, data_files=files, **kwargs)

    return hf_dataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("parts")
    parser.add_argument("model")
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-connections", type=int, default=16)
    parser.add_argument("--log-dir", default=None)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    results = {}
    for part in args.parts.split(","):
        lab_bench.hf_dataset = local_rows(args.root / part)
        task = TASKS[part]()
        samples = {str(s.id): {"choices": s.choices, "target": s.target} for s in task.dataset}
        (log,) = inspect_ai.eval(
            task,
            model=args.model,
            display="none",
            max_connections=args.max_connections,
            limit=args.limit,
            log_dir=args.log_dir or str(args.out.parent / "inspect-logs"),
        )
        result = {"status": log.status, "error": str(log.error) if log.error else None}
        result["samples"] = samples
        if log.status == "success":
            result["metrics"] = {
                name: metric.value for s in log.results.scores for name, metric in s.metrics.items()
            }
            result["verdicts"] = {
                str(s.id): s.scores["precision_choice"].value for s in log.samples
            }
        results[part] = result
    args.out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
