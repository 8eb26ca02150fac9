"""Where the workflow's files live (relative to the working directory).

The Snakemake rules and the package share these patterns, so a path is defined
once. Wildcards: ``model``, ``method``, ``shard`` and ``shards``; a run (model,
method) is the unit of the run and score jobs, whatever tasks it covers.
"""

UPSTREAM_DIR = "resources/upstream"
UPSTREAM_LOCK = "resources/upstream.lock.tsv"
QUESTIONS = "resources/benchmarks/questions.jsonl"
RECORDED_SNAPSHOT = "resources/snapshots/recorded/{recording}/{run_dir}/{task}.json"
LIVE_SNAPSHOT = "resources/snapshots/live/{name}.json"
LOCAL_MODEL = "resources/models/{weights}"  # a GGUF file converted for fast loading
TOOL_CACHE_SEED = "resources/cache/seeds/{recording}.json"  # marks a seeded tool cache

RUN_SHARD = "results/runs/{model}/{method}/shard-{shard}-of-{shards}.jsonl"
RUN_SCORES = "results/scores/{model}/{method}.jsonl"

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
    "index.html",
    "leaderboard.csv",
    "imports.csv",
    "genesets.csv",
    "comparisons.csv",
    "taxonomy.csv",
    "ablation.csv",
    "leaderboard.png",
    "leaderboard.svg",
    "ablation.png",
    "ablation.svg",
    "percentile.png",
    "percentile.svg",
)
