"""Where the workflow's files live (relative to the working directory).

The Snakemake rules and the package share these patterns, so a path is defined
once. Wildcards: ``model``, ``method``, ``benchmark``, ``task`` (a slug),
``shard`` and ``shards``.
"""

UPSTREAM_DIR = "resources/upstream"
UPSTREAM_LOCK = "resources/upstream.lock.tsv"
QUESTIONS = "resources/benchmarks/questions.jsonl"
RECORDED_SNAPSHOT = "resources/snapshots/recorded/{recording}/{run_dir}/{task}.json"
LIVE_SNAPSHOT = "resources/snapshots/live/{name}.json"
LOCAL_MODEL = "resources/models/{model}"  # a GGUF model converted for fast loading
TOOL_CACHE_SEED = "resources/cache/seeds/{recording}.json"  # marks a seeded tool cache

RUN_SHARD = "results/runs/{model}/{method}/{benchmark}/{task}/shard-{shard}-of-{shards}.jsonl"
TASK_SCORES = "results/scores/{model}/{method}/{benchmark}/{task}.jsonl"

REPORT_DIR = "results/report"
REPORT_FILES = (
    "report.md",
    "scores.csv",
    "replay.csv",
    "errors.csv",
    "cost.csv",
    "table2.md",
    "table2.csv",
    "genehop.md",
    "provenance.json",
)
