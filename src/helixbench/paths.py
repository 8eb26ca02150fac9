"""Where the workflow's files live (relative to the working directory).

The Snakemake rules and the package share these patterns, so a path is defined
once. Wildcards: ``model``, ``method``, ``variant``, ``shard`` and ``shards``; a run
(model, method) is the unit of the run and score jobs, whatever tasks it covers, and
its files lie under its ``variant`` (a digest of everything that shapes it: two
configs that give one name to two runs keep each their own files).
"""

import os
from dataclasses import dataclass
from pathlib import Path

UPSTREAM_DIR = "resources/upstream"
UPSTREAM_LOCK = "resources/upstream.lock.tsv"
# Every verified upstream file once more, by its sha256 (hard links): not a rule's
# output, so a file Snakemake removes before a job (a rerun, a changed trigger) is
# restored from here, never fetched again, and offline nothing verified is lost.
UPSTREAM_STORE = "resources/cache/upstream"
QUESTIONS = "resources/benchmarks/questions.jsonl"
RECORDED_SNAPSHOT = "resources/snapshots/recorded/{recording}/{run_dir}/{task}.json"
LIVE_SNAPSHOT = "resources/snapshots/live/{name}.json"
# A corpus's vector index (helixbench.retrieval), by its key; index.json marks it built.
INDEX_DIR = "resources/index/{key}"
INDEX_MARKER = INDEX_DIR + "/index.json"
LOCAL_MODEL = "resources/models/{weights}"  # a GGUF file converted for fast loading
ORIGINAL_ENV = "resources/envs/{env}/env.json"  # a seed system's own environment, built
# What a seed system builds before it runs (BRAD-Agent: its RAG database), outside the
# agent sandbox, which shows it read-only; the marker says it is built.
ORIGINAL_PREPARED = "resources/index/{original}/prepared.json"
# The peers' own wording of LAB-Bench's prompts (inspect_evals' template, chembench's
# chain-of-thought line), read from their packages in the peers' environment.
PEER_ENV = "resources/envs/inspect/env.json"
PEER_TEMPLATES = "resources/peers/lab-bench.json"
# The code tools' environment (workflow/envs/tools/code.yaml) and their executions.
CODE_ENV = "resources/envs/code/env.json"
CODE_CACHE = "resources/cache/code.sqlite"
# The caches every job shares unless the config names others (tools.cache, model_cache).
TOOL_CACHE = "resources/cache/tools.sqlite"
MODEL_CACHE = "resources/cache/models.sqlite"
# The percentile scorer's background, one name a line (scoring.background).
PERCENTILE_BACKGROUND = "resources/benchmarks/percentile-background.txt"
# Marks a seeded tool cache: one marker per recording and set of its files seeded (two
# configs that seed different masks keep their own, so neither reruns the other's runs).
TOOL_CACHE_SEED = "resources/cache/seeds/{recording}/{files}.json"


RUNS_DIR = "results/runs"
RUN_SHARD = RUNS_DIR + "/{model}/{method}/{variant}/shard-{shard}-of-{shards}.jsonl.zst"
RUN_SCORES = "results/scores/{model}/{method}/{variant}.jsonl.zst"
# The calls of the run's model-based scorers that judge with a model (RAGAs' judge),
# by question: JSON lines {question_id, events}.
RUN_JUDGE_CALLS = "results/judge-calls/{model}/{method}/{variant}.jsonl"
# A run's share of the report, written by its own job (report/run_summary.py).
SUMMARIES_DIR = "results/summaries"
RUN_SUMMARY_DIR = SUMMARIES_DIR + "/{model}/{method}/{variant}"
RUN_SUMMARY = RUN_SUMMARY_DIR + "/summary.json"
# Per question, the digests of the prompts its model calls sent: read by the report
# only for the models with an agent run (operations.with_shared_prompts), so they stay
# out of the summary every join reads.
RUN_PROMPTS = RUN_SUMMARY_DIR + "/prompts.json"
RUN_SCORE_TABLE = RUN_SUMMARY_DIR + "/scores.parquet"
# What shaped the run's scores and summary (scoring/batch.py): unchanged, not rescored.
RUN_FINGERPRINT = RUN_SUMMARY_DIR + "/fingerprint"
# Raised when a summary's content changes: a parameter of the summarize jobs, so
# Snakemake redoes the summaries an older helixbench wrote.
RUN_SUMMARY_VERSION = 8

# A run's questions and transcripts for the HTML report (index.html loads it from
# here, ../summaries/... from results/report: the report does not copy it).
RUN_DETAILS = RUN_SUMMARY_DIR + "/details.js"
# A batch of runs scored in one process (the plan's runs, ``score_batch`` at a time):
# its record of each run's fingerprint, the score job's one declared output (the runs'
# own files are moved in place by the job, run by run: scoring/batch.py). Apart from
# the runs' folders: a batch spans models.
SCORE_BATCH = "results/score-batches/{batch}.json"
# Where a score job writes a run's files before moving them in place.
STAGED_DIR = "results/.staged/{model}/{method}/{variant}"
# A run in other tools' formats (report.exports; report/exports.py), copied into the
# report's exports/ folder.
RUN_EXPORTS = "results/exports/{model}/{method}/{variant}"

# The report a reader opens: a link to the report of the config that ran last, among
# every config's own (REPORTS_DIR/<config key>), so that switching configs reruns nothing.
REPORT_DIR = "results/report"
REPORTS_DIR = "results/reports"
# The report's own copies of its runs' exports: exactly the runs of the config it was
# built from (report/details.py, place_exports). Its runs' question files it reads
# where their score jobs wrote them (RUN_DETAILS).
REPORT_EXPORTS_DIR = REPORT_DIR + "/exports"


@dataclass(frozen=True)
class ReportFile:
    """A file the report writes; one with a caption (``workflow/report/<caption>.rst``)
    is registered in Snakemake's own report under ``category``."""

    name: str
    caption: str | None = None
    category: str | None = None


# The report's tables that grow with runs x tasks (a row per run, task and metric, or
# per pair of runs tested), gzip-compressed: at 10,000 runs of the question bank they
# were 480 MB of CSV, more than the rest of the report. pandas, DuckDB, R and zcat read
# them as they are.
LONG_TABLES = frozenset({"scores", "comparisons", "errors", "question_bank", "taxonomy"})


def table_file(name: str) -> str:
    """The report's file of table ``name``: ``<name>.csv``, or ``.csv.gz`` for a long one."""
    return f"{name}.csv.gz" if name in LONG_TABLES else f"{name}.csv"


# Every file of results/report/: the report rule's outputs and what the writer writes.
REPORT = (
    ReportFile("report.md", "report", "Report"),
    ReportFile("scores.csv.gz", "scores", "Scores"),
    ReportFile("replay.csv", "replay", "Replay"),
    ReportFile("errors.csv.gz"),
    ReportFile("cost.csv", "cost", "Cost"),
    ReportFile("agents.csv"),
    ReportFile("table2.md", "table2", "Scores"),
    ReportFile("table2.csv"),
    ReportFile("genehop.md"),
    ReportFile("provenance.json"),
    # The tool replies the runs read from the cache (report/tool_replies.py): with the
    # same config, another machine replays the runs offline from them.
    ReportFile("tool_replies.jsonl"),
    # The code tools' executions the runs read or made (gateway/code.py), likewise.
    ReportFile("code_executions.jsonl"),
    # Per-question scores of every run (report/question_scores.py has the schema).
    # (and as CSV, question_scores.csv, with the setting report.question_scores_csv)
    ReportFile("question_scores.parquet"),
    # What produced the report, as an RO-Crate (report/crate.py), written last, with
    # the validated config it cites.
    ReportFile("config.json"),
    ReportFile("ro-crate-metadata.json"),
    # The page, and its copy with every run inside for Snakemake's own report (which
    # embeds a page without results/summaries beside it; report/details.py).
    ReportFile("index.html"),
    ReportFile("index-bundled.html", "index", "Report"),
    ReportFile("headline.csv", "headline", "Scores"),
    ReportFile("leaderboard.csv", "leaderboard", "Scores"),
    ReportFile("genesets_leaderboard.csv", "genesets_leaderboard", "Scores"),
    ReportFile("imports.csv", "imports", "Scores"),
    ReportFile("comparisons.csv.gz", "comparisons", "Scores"),
    ReportFile("protocols.csv", "protocols", "Scores"),
    ReportFile("protocol_tests.csv", "protocol_tests", "Scores"),
    ReportFile("question_bank.csv.gz", "question_bank", "Scores"),
    ReportFile("question_bank_leaderboard.csv", "question_bank_leaderboard", "Scores"),
    ReportFile("overlap.csv", "overlap", "Scores"),
    ReportFile("overlap_golds.csv", "overlap_golds", "Scores"),
    ReportFile("taxonomy.csv.gz", "taxonomy", "Errors"),
    ReportFile("ablation.csv", "ablation", "Scores"),
    ReportFile("leaderboard.png", "leaderboard", "Figures"),
    ReportFile("leaderboard.svg"),
    ReportFile("ablation.png", "ablation", "Figures"),
    ReportFile("ablation.svg"),
    ReportFile("genesets.csv", "genesets", "Scores"),
    # GeneAgent's paper beside our scoring of its own generations (report/geneagent_paper.py)
    ReportFile("geneagent_paper.csv"),
    ReportFile("percentile.png", "genesets", "Figures"),
    ReportFile("percentile.svg"),
    # Hu et al.'s sets: robustness to contamination, their ranks beside ours
    # (report/robustness.py)
    ReportFile("ragas.csv", "ragas", "Scores"),  # RAGAs per retrieval run (rag_assessment.py)
    ReportFile("robustness.csv", "robustness", "Scores"),
    ReportFile("hu_ranks.csv"),
    ReportFile("robustness.png", "robustness", "Figures"),
    ReportFile("robustness.svg"),
    # LABBench2: the frontier's published runs beside the config's (report/frontier.py)
    ReportFile("labbench2.csv", "labbench2", "Scores"),
    ReportFile("labbench2_tools.csv", "labbench2_tools", "Scores"),
    ReportFile("labbench2_agreement.csv", "labbench2_agreement", "Scores"),
    ReportFile("labbench2_disagreements.csv"),
    ReportFile("labbench2_successors.csv"),
    # BixBench's zero-shot baselines beside the config's runs (report/bixbench.py)
    ReportFile("bixbench.csv", "bixbench", "Scores"),
    ReportFile("bixbench_paired.csv"),
    ReportFile("bixbench_verifier.csv"),
    ReportFile("bixbench_beside.csv"),
    # Each grading judge's calls per run and task, decided and not (report/judges.py)
    ReportFile("judges.csv", "judges", "Scores"),
    ReportFile("judge_calibration.csv", "judge_calibration", "Scores"),
    ReportFile("judge_corrected.csv"),
    ReportFile("judge_agreement.csv", "judge_agreement", "Scores"),
    ReportFile("judge_disagreements.csv"),
)
REPORT_FILES = tuple(f.name for f in REPORT)


def show_report(target) -> None:
    """Point :data:`REPORT_DIR` at ``target`` (a config's report under
    :data:`REPORTS_DIR`) with a relative link, replaced at once. A folder an older
    helixbench wrote there is kept, moved into :data:`REPORTS_DIR`."""
    link, target = Path(REPORT_DIR), Path(target)
    if os.path.abspath(target) == os.path.abspath(link):
        return  # (a report written at the link's own place: nothing to point)
    relative = os.path.relpath(target, link.parent)
    if link.is_symlink():
        if os.readlink(link) == relative:
            return
    elif link.exists():
        kept = Path(REPORTS_DIR) / f"earlier-{int(link.stat().st_mtime)}"
        kept.parent.mkdir(parents=True, exist_ok=True)
        link.rename(kept)
    link.parent.mkdir(parents=True, exist_ok=True)
    new = link.with_name(f".report-{os.getpid()}")
    new.unlink(missing_ok=True)
    os.symlink(relative, new)
    os.replace(new, link)


def upstream_path(file) -> str:
    """Where the local copy of an upstream file (an UpstreamFile) lies."""
    return f"{UPSTREAM_DIR}/{file.relpath}"


def user_cache_dir() -> Path:
    """The cache a user's working directories share, $XDG_CACHE_HOME/helixbench
    (~/.cache/helixbench): only what is keyed by all it derives from lives there."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "helixbench"


# What the console prints when the workflow ends (the report's paths and leaders),
# written by the report job so that the ending costs no import of the report code.
REPORT_CONSOLE_SUMMARY = "logs/report-summary.txt"
