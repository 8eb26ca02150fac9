"""helixbench's command line.

The commands a person types (``plan``, ``status``, ``compare``, ``recordings``,
``cache``) are in :mod:`.commands` and read the working directory; the workflow's
jobs (``fetch``, ``run``, ``score``, ``report``, ...) are in :mod:`.jobs`, one per
rule, and stay out of ``helixbench --help``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys

from .. import paths
from . import commands, jobs

DESCRIPTION = """\
Benchmarks of tool-augmented language models on genomics questions. The workflow
itself runs with `snakemake --cores 8`; these commands look at what it will do and
what it did. Each reads the working directory (a clone's root) and writes nothing,
but for `cache --import`, which adds another machine's replies to the caches.
"""
EPILOG = """\
The workflow's rules also call job commands (fetch, questions, snapshot,
live-snapshot, seed-cache, run, prepare-model, index, background, score, env,
report); they are internal, and `helixbench JOB --help` documents each. Guide:
docs/ (mkdocs serve).
"""
USER_COMMANDS = ("plan", "status", "compare", "recordings", "cache")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        typed = re.search(r"invalid choice: '([^']*)'", message)
        if typed and self.prog == "helixbench":  # a mistyped command
            from ..errors import unknown_name

            message = unknown_name("command", typed.group(1), USER_COMMANDS)
        super().error(message)


def _add_config(p, required_alternative: bool = False) -> None:
    group = p.add_mutually_exclusive_group(required=required_alternative)
    group.add_argument(
        "--config",
        nargs="+",
        metavar="FILE",
        help="config files merged over config/config.yaml in order, as "
        "`snakemake --configfile FILE ...` merges them (default: config/config.yaml alone)",
    )
    group.add_argument("--config-json", help=argparse.SUPPRESS)  # the workflow's own
    return group


def _user_commands(sub) -> None:
    p = sub.add_parser(
        "plan", help="what a config will run: runs, tasks, questions, shards and notes"
    )
    _add_config(p)
    p.add_argument(
        "--check",
        action="store_true",
        help="also check what the runs need (API keys set, model servers answering, the "
        "mirror's files) and exit non-zero naming each problem per run",
    )
    p.set_defaults(func=commands.plan)

    p = sub.add_parser(
        "status",
        help="every planned run shard: done, running, stopped or not started, with "
        "questions done, rate and ETA; then each run's scoring: scored, not scored or "
        "failed (with the earlier scores it kept) (reads, never writes)",
    )
    group = _add_config(p)
    group.add_argument(
        "--all", action="store_true", help="every shard on disk, of any config, none planned"
    )
    p.add_argument("--runs", default=paths.RUNS_DIR, help="the runs directory (%(default)s)")
    p.add_argument("--json", action="store_true", help="one JSON object per shard")
    p.set_defaults(func=commands.status)

    p = sub.add_parser(
        "compare",
        help="paired test of two runs on every task both ran (sign-flip permutation)",
    )
    group = _add_config(p)
    group.add_argument(
        "--scores",
        nargs="+",
        metavar="TABLE",
        help="per-question score tables (question_scores.parquet or .csv, several working "
        "directories' at once) instead of a config",
    )
    p.add_argument("--a", required=True, help="a run, 'model / method'")
    p.add_argument("--b", required=True, help="the run to test it against")
    p.set_defaults(func=commands.compare)

    p = sub.add_parser(
        "recordings",
        help="the recorded GeneGPT runs upstream holds and the loop variant each file shows",
    )
    p.add_argument("--mirror", help="mirror directory (HELIXBENCH_MIRROR overrides)")
    p.set_defaults(func=commands.recordings)

    p = sub.add_parser(
        "cache", help="what the tool and model response caches hold (read-only; --import writes)"
    )
    p.add_argument(
        "--tools",
        default=paths.TOOL_CACHE,
        help="the tool reply cache (%(default)s)",
    )
    p.add_argument(
        "--models",
        default=paths.MODEL_CACHE,
        help="the model response cache (%(default)s)",
    )
    p.add_argument(
        "--code",
        default=paths.CODE_CACHE,
        help="the code tools' execution cache (%(default)s)",
    )
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="first put a report's tool_replies.jsonl in the tool cache, or its "
        "code_executions.jsonl in the code cache (entries there are kept), to rerun its "
        "config offline with the same replies and executions",
    )
    p.set_defaults(func=commands.cache)


def _job_commands(sub) -> None:
    """The rules' commands: no ``help=`` so that ``helixbench --help`` lists none."""
    p = sub.add_parser("fetch", description="Fetch pinned upstream files.")
    p.add_argument(
        "output", nargs="+", help="where each file goes, resources/upstream/<host>/<path>"
    )
    p.add_argument("--mirror", help="mirror directory (HELIXBENCH_MIRROR overrides)")
    p.add_argument("--lock", required=True, help="lock file for checksums not pinned upstream")
    p.add_argument("--url", help="URL of a file the config pins (not in the manifest)")
    p.add_argument("--sha256", help="its pinned sha256 (or 'unknown': taken into the lock file)")
    p.set_defaults(func=jobs.fetch)

    p = sub.add_parser("questions", description="Write the question table.")
    p.add_argument("--out", required=True, help="the question table (JSON lines)")
    p.set_defaults(func=jobs.questions)

    p = sub.add_parser("snapshot", description="Extract a recorded run's demonstration snapshot.")
    p.add_argument("--recording", required=True, help="the recorded run's local file")
    p.add_argument("--recording-name", required=True, help="the recording's registry name")
    p.add_argument("--url", required=True, help="the recorded file's upstream URL")
    p.add_argument("--mask", required=True, help="the six-digit prompt mask it was run with")
    p.add_argument("--out", required=True, help="the snapshot (JSON)")
    p.set_defaults(func=jobs.snapshot)

    p = sub.add_parser("live-snapshot", description="Take a snapshot through the tools.")
    p.add_argument("--name", required=True, help="the snapshot's name in the config")
    p.add_argument(
        "--mode", default="refresh", choices=["offline", "live", "refresh"], help="tool mode"
    )
    p.add_argument("--out", required=True, help="the snapshot (JSON)")
    p.set_defaults(func=jobs.live_snapshot)

    p = sub.add_parser("seed-cache", description="Seed the tool cache from recorded runs.")
    p.add_argument("--recording", required=True, help="the recording's registry name")
    p.add_argument("--cache", required=True, help="the tool cache (SQLite)")
    p.add_argument("--out", required=True, help="summary JSON that marks the seed done")
    p.add_argument("files", nargs="+", help="the recorded run's local files")
    p.set_defaults(func=jobs.seed_cache)

    p = sub.add_parser("run", description="Run one shard of a run (model x method).")
    p.add_argument(
        "--spec",
        required=True,
        help="the run's JSON spec from the plan (its tasks name their recordings and snapshots)",
    )
    p.add_argument("--shard", type=int, required=True, help="which shard, from 0")
    p.add_argument("--questions", required=True, help="the question table")
    p.add_argument("--model-cache", help="SQLite response cache of model calls")
    p.add_argument("--model-dir", help="a local model converted by prepare-model")
    p.add_argument("--threads", type=int, help="CPU threads a local model may use")
    p.add_argument("--out", required=True, help="the shard's records (JSON lines)")
    p.add_argument(
        "--log",
        help="the job's log: all output goes there, and progress lines, sparser, also to "
        "the console the job was started with",
    )
    p.set_defaults(func=jobs.run)

    p = sub.add_parser("prepare-model", description="Convert a GGUF model for fast loading.")
    p.add_argument("--spec", required=True, help="the model's config entry as JSON")
    p.add_argument("--out", required=True, help="the converted model's directory")
    p.set_defaults(func=jobs.prepare_model)

    p = sub.add_parser("index", description="Chunk, embed and index a corpus (brad methods).")
    p.add_argument("--settings", required=True, help="the index's settings as JSON")
    p.add_argument("--out", required=True, help="the index's marker file (index.json)")
    p.set_defaults(func=jobs.index)

    p = sub.add_parser("score", description="Score a run's shards per question.")
    p.add_argument("--spec", required=True, help="the run's JSON spec from the plan")
    p.add_argument("--questions", required=True, help="the question table")
    p.add_argument("--scoring", required=True, help="the config's scoring section as JSON")
    p.add_argument(
        "--scorer-models",
        help="config entries (name -> spec, JSON) of the models the scorers ask (judge, extractor)",
    )
    p.add_argument("--model-cache", help="SQLite response cache of the judge's calls")
    p.add_argument("--background", help="the percentile scorer's names, one a line")
    p.add_argument("--ragas-env", help="RAGAs' environment (its env.json), for scoring.ragas")
    p.add_argument("--judge-calls", help="where RAGAs' judge calls go, by question (JSON lines)")
    p.add_argument("--out", required=True, help="the run's scores (JSON lines)")
    p.add_argument(
        "--summary",
        help="also the run's share of the report: its summary.json (its folder gets the "
        "per-question table and the prompt digests)",
    )
    p.add_argument("--details", help="with --summary: the run's questions for the HTML report")
    p.add_argument("shards", nargs="+", help="the run's shard files")
    p.set_defaults(func=jobs.score)

    p = sub.add_parser(
        "background",
        description="The percentile scorer's background: GO's biological-process names "
        "that carry genes (Hu et al.'s pinned files), then the gene-set datasets' names.",
    )
    p.add_argument("--questions", required=True, help="the question table")
    p.add_argument(
        "--go",
        nargs=3,
        metavar="FILE",
        help="Hu et al.'s goID_2_name.tab, goID_2_namespace.tab and collapsed_go.symbol",
    )
    p.add_argument("--out", required=True, help="the names, one a line")
    p.add_argument("--scoring", default="{}", help="the config's scoring section as JSON")
    p.add_argument("--model-cache", help="encode the names into the cache beside this one")
    p.set_defaults(func=jobs.background)

    p = sub.add_parser(
        "export", description="A run in other tools' formats (Every Eval Ever, Inspect)."
    )
    p.add_argument("--spec", required=True, help="the run's JSON spec from the plan")
    p.add_argument("--questions", required=True, help="the question table")
    p.add_argument("--scoring", required=True, help="the config's scoring section as JSON")
    p.add_argument("--scores", required=True, help="the run's scores (JSON lines)")
    p.add_argument("--summary", required=True, help="the run's summary.json")
    formats = ("every-eval-ever", "inspect")
    p.add_argument("--formats", required=True, nargs="+", choices=formats, help="what to write")
    p.add_argument("--inspect-env", help="the inspect environment's marker (env.json)")
    p.add_argument("--out", required=True, help="the run's export folder")
    p.add_argument("shards", nargs="+", help="the run's shard files")
    p.set_defaults(func=jobs.export)

    p = sub.add_parser("env", description="Build a seed system's own environment.")
    p.add_argument("env_file", help="its environment file, workflow/envs/originals/<name>.yaml")
    p.add_argument("--out", required=True, help="the environment's marker, <dir>/env.json")
    p.add_argument(
        "--in-place",
        action="store_true",
        help="record the running environment (Snakemake built the file's under --sdm conda)",
    )
    p.set_defaults(func=jobs.environment)

    p = sub.add_parser(
        "prepare-original",
        description="What a seed system builds before it runs (BRAD-Agent: its database).",
    )
    p.add_argument("original", help="the seed system (methods.originals)")
    p.add_argument("--env", required=True, help="its environment's marker, <dir>/env.json")
    p.add_argument("--out", required=True, help="the marker written once it is built")
    p.set_defaults(func=jobs.prepare_original)

    p = sub.add_parser(
        "peer-templates",
        description="The peers' own wording of LAB-Bench's prompts (inspect_evals, chembench).",
    )
    p.add_argument("--env", required=True, help="the peers' environment's marker (env.json)")
    p.add_argument("--out", required=True, help="where the wording is written (JSON)")
    p.set_defaults(func=jobs.peer_templates)

    p = sub.add_parser("report", description="Write the report directory.")
    _add_config(p, required_alternative=True)
    p.add_argument("--out-dir", required=True, help="the report directory")
    p.add_argument("--config-sources", help="JSON list: the config files it was built from")
    p.set_defaults(func=jobs.report)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="helixbench",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    _user_commands(sub)
    _job_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> None:
    # Before anything imports torch: see helixbench.models.local.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    args = build_parser().parse_args(argv)
    from ..datasets.fetch import pin_mirror_env

    pin_mirror_env()
    from .. import job_logging, secrets

    job_logging.configure()
    from ..datasets.fetch import FetchError
    from ..datasets.snapshots import SnapshotError
    from ..errors import ConfigError, DataError
    from ..gateway.sandbox import SandboxUnavailable
    from ..models import ModelError

    try:
        args.func(args)
    except (
        FetchError,
        ConfigError,
        SnapshotError,
        ModelError,
        DataError,
        SandboxUnavailable,
    ) as exc:  # expected: the message says it all
        print(f"error: {secrets.redact(str(exc))}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:  # Ctrl-C: every job hears it; each says so in one line
        print(f"helixbench {args.command}: interrupted (a rerun resumes)", file=sys.stderr)
        stop_now(130)
    except Exception as exc:  # unexpected: the traceback, then a one-line summary
        logging.exception("helixbench %s failed", args.command)
        print(f"error: {secrets.redact(str(exc))}", file=sys.stderr)
        raise SystemExit(1) from None


def stop_now(code: int) -> None:
    """End the process now, its cleanups done (the gateways, the agents' sandboxes, the
    logs): not waiting for the questions in flight, whose records so far are written
    (a shard's file is written through each question; a rerun resumes after them)."""
    import atexit
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a second Ctrl-C: the cleanups finish)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def cli_reference_markdown() -> str:
    """The command line's reference page (docs/reference/cli.md): each command's own
    ``--help``, the user commands first, then the jobs the rules call."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = ["# Command line", "", "```text", parser.format_help().rstrip(), "```", ""]
    for title, names in (
        ("Commands", USER_COMMANDS),
        ("Workflow jobs (called by the rules)", [n for n in sub.choices if n not in USER_COMMANDS]),
    ):
        lines += [f"## {title}", ""]
        for name in names:
            help_text = sub.choices[name].format_help().rstrip()
            lines += [f"### `helixbench {name}`", "", "```text", help_text, "```", ""]
    return "\n".join(lines)
