"""The commands a person types: ``plan``, ``status``, ``compare``, ``recordings`` and
``cache``. Each reads the working directory and writes nothing, but for ``cache
--import``, which adds another machine's tool replies to the tool cache."""

from __future__ import annotations

import json
import sys
from pathlib import Path

WORKFLOW_CONFIG = Path("config/config.yaml")  # what `snakemake` reads, from the clone's root


def read_configs(files: list[str] | None) -> tuple[dict, list[str]]:
    """The config Snakemake would run with ``--configfile files``: the workflow's
    ``config/config.yaml`` (where there is one), each file merged over it in order
    (mappings key by key, anything else replaced whole), checked against the schema."""
    import yaml
    from snakemake.utils import update_config

    from ..config.schema import SCHEMA, check_config
    from ..errors import ConfigError

    read = [str(WORKFLOW_CONFIG)] if WORKFLOW_CONFIG.is_file() else []
    read += [f for f in files or () if Path(f).resolve() != WORKFLOW_CONFIG.resolve()]
    if not read:
        raise ConfigError(f"no {WORKFLOW_CONFIG} here: run from the clone's root or pass --config")
    config: dict = {}
    for name in read:
        try:
            update_config(config, yaml.safe_load(Path(name).read_text(encoding="utf-8")) or {})
        except OSError as exc:
            raise ConfigError(f"{name}: {exc.strerror}") from None
        except yaml.MarkedYAMLError as exc:  # where, in the file's own lines and columns
            mark = exc.problem_mark or exc.context_mark
            where = f"{name}, line {mark.line + 1}, column {mark.column + 1}" if mark else name
            raise ConfigError(f"invalid config: {where}: {exc.problem or exc.context}") from None
    if SCHEMA.is_file():  # beside a clone's workflow; an installed package has none
        check_config(config, read)
    return config, read


def config_and_plan(args):
    """The config (the workflow's, with ``--config`` files over it, or the workflow's
    JSON) and its plan, built once."""
    from ..config import build_plan
    from ..datasets.fetch import resolve_mirror
    from ..errors import ConfigError

    if getattr(args, "config_json", None):  # a job's: checked when the workflow started
        # ("-": on standard input, as the report rule gives a sweep's config)
        config = json.loads(sys.stdin.read() if args.config_json == "-" else args.config_json)
        return config, build_plan(config, resolve_mirror(config.get("mirror")))
    config, files = read_configs(args.config)
    try:
        return config, build_plan(config, resolve_mirror(config.get("mirror")))
    except ConfigError as exc:
        from ..config.schema import naming_the_file

        raise ConfigError(naming_the_file(str(exc), files)) from None


def compare(args) -> None:
    from ..errors import ConfigError
    from ..report.tables.comparisons import compare_two

    if args.scores:
        from ..report.question_scores import read_question_scores

        table = read_question_scores([Path(f) for f in args.scores])
    else:
        from ..report.question_scores import question_score_table
        from ..report.records import load_scores

        _, plan = config_and_plan(args)
        labels = [r.label for r in plan.runs]
        for name in (args.a, args.b):
            if name not in labels:
                hint = "" if args.config else _config_hint()
                raise ConfigError(f"no run {name!r}; runs: {', '.join(labels)}{hint}")
        wanted = [r for r in plan.runs if r.label in (args.a, args.b)]
        unscored = [r.label for r in wanted if not Path(r.score_path).is_file()]
        if unscored:
            raise ConfigError(f"no scores of {', '.join(unscored)} yet: run snakemake first")
        table = question_score_table(plan, load_scores(plan, wanted), "")
    from ..report.text import NO_INTERVAL

    try:
        rows = compare_two(table, args.a, args.b)
    except ConfigError as exc:
        if args.scores or args.config:
            raise
        raise ConfigError(f"{exc}{_config_hint()}") from None
    print("benchmark\ttask\tmetric\tn\ta\tb\ta-b\t95% interval\tp")

    def signed(x: float) -> str:  # (no "-0.0000" for a bound a hair below zero)
        return f"{round(x, 4) + 0.0:+.4f}"

    for r in rows:
        interval = f"[{signed(r['ci_low'])}, {signed(r['ci_high'])}]"
        if r["ci_low"] is None or r["ci_low"] != r["ci_low"]:  # (None or NaN)
            interval = f"({NO_INTERVAL})"
        print(
            f"{r['benchmark']}\t{r['task']}\t{r['metric']}\t{r['n']}\t{r['score_a']:.4f}"
            f"\t{r['score_b']:.4f}\t{signed(r['difference'])}\t{interval}\t{r['p_value']:.4f}"
        )
    print(
        "(a macro row is the report's headline for the pair: the difference of macro "
        "scores, each task counting once, the interval of differences the sign-flip test "
        "does not reject, its p; a pooled figure, every question counting once, as the "
        "LABBench2 tools table's `all` row, can differ)"
    )


def _config_hint() -> str:
    """Where ``compare`` without ``--config`` read the workflow's config alone: the
    configs the latest report was built from, to pass as ``--config``."""
    from .. import paths

    provenance = Path(paths.REPORT_DIR) / "provenance.json"
    try:
        sources = json.loads(provenance.read_text(encoding="utf-8")).get("config_files") or []
    except (OSError, ValueError):
        sources = []
    extra = [s for s in sources if Path(s) != WORKFLOW_CONFIG]
    alone = f"; this read {WORKFLOW_CONFIG} alone"
    if extra:
        return f"{alone}: the latest report was built with --config {' '.join(extra)}"
    return f"{alone}: pass the config that ran them with --config FILE"


def plan(args) -> None:
    from ..benchmarks import local_question_table
    from ..datasets.fetch import resolve_mirror
    from ..datasets.questions import NEEDS_FILES
    from ..datasets.selection import answered_by, run_questions
    from ..report.tables.question_bank import overlap_summary
    from ..report.text import counted

    config, plan = config_and_plan(args)
    mirror = resolve_mirror(config.get("mirror"))
    questions = local_question_table(mirror)
    for run in plan.runs:
        print(f"{run.model}\t{run.method}\t{run.shards} shard(s)")
        if questions is None:
            for task in run.tasks:
                print(f"\t{task.benchmark}\t{task.task}")
            continue
        spec = run.spec()
        asked = {q.id for _, q in run_questions(questions, spec)}
        repeats = answered_by(questions, spec)
        for task in run.tasks:
            of_task = [q for q in questions if (q.benchmark, q.task) == (task.benchmark, task.task)]
            ids = {q.id for q in of_task}
            line = f"\t{task.benchmark}\t{task.task}\t{counted(len(of_task), 'question')}"
            held = sum(not q.askable for q in of_task)
            if held and not run.imported:  # (asked by the source that had their files)
                line += f", {len(of_task) - held} askable ({held} need {NEEDS_FILES})"
            if spec.get("sample"):
                line += f", {len(ids & (asked | set(repeats)))} sampled"
            shared = sum(q.overlap is not None for q in of_task)
            if shared:
                line += f"; {shared} shared with GeneTuring/GeneHop"
            if ids & set(repeats):
                line += f", {len(ids & set(repeats))} answered by the same question asked once"
            print(line)
        print(f"\t{counted(len(asked), 'question')} asked")
    for note in plan.notes:
        where = f"{note['model']} / {note['method']} ({note['benchmark']})"
        print(f"{note['level']}: {where}: {note['message']}")
    if questions is None:
        print("question counts: the benchmark files are not here yet (no mirror, not fetched)")
    else:
        planned = {task.benchmark for run in plan.runs for task in run.tasks}
        for line in overlap_summary(questions, planned):
            print(f"overlap: {line}")
    if getattr(args, "check", False):
        _check(plan, mirror)


def _check(plan, mirror) -> None:
    """``plan --check``: each problem a run would meet, then exit 1 if there is one."""
    from ..config.checks import downloads, run_problems, scoring_problems

    mirror = Path(mirror) if mirror else None
    problems = run_problems(plan, mirror) + scoring_problems(plan)
    for where, problem in problems:
        print(f"check: {where}: {problem}")
    fetched = downloads(plan, mirror)
    if fetched:  # not a problem, but the one step that needs the network
        size = sum(f.size or 0 for f in fetched) / 1e6
        hosts = ", ".join(sorted({f.url.split("/")[2] for f in fetched}))
        print(
            f"check: the network: {len(fetched)} upstream file(s), {size:.1f} MB, would be "
            f"downloaded from {hosts} (offline: set HELIXBENCH_MIRROR to a mirror)"
        )
    if problems:
        raise SystemExit(f"plan --check: {len(problems)} problem(s); the runs above would fail")
    print(
        "check: every key, server and file the runs need is here"
        + (", once those files are downloaded" if fetched else "")
    )


def status(args) -> None:
    from ..errors import ConfigError
    from ..paths import RUNS_DIR
    from ..run.progress import format_statuses, planned_shards, shard_statuses

    planned = None  # without a config: the shards on disk are all there is to show
    unplanned = None  # why no config says what is planned
    plan = None
    if not args.all and (args.config or args.runs == RUNS_DIR):  # a working directory's
        try:
            plan = config_and_plan(args)[1]
            planned = planned_shards(plan)
        except ConfigError as exc:
            if args.config:  # asked for: its mistake is the answer
                raise
            unplanned = str(exc)
    statuses = shard_statuses(Path(args.runs), planned=planned)
    others = 0
    if planned is not None:  # the config's shards; of the others, how many
        statuses, others = statuses[: len(planned)], len(statuses) - len(planned)
    if args.json:
        from dataclasses import asdict

        print(json.dumps([asdict(s) for s in statuses], indent=1))
        return
    if statuses:
        print(format_statuses(statuses))
    elif unplanned:  # (outside a clone, say: what is wrong, as `plan` says it)
        raise ConfigError(f"{unplanned}; and no shard under {args.runs}")
    else:
        print(f"no shard planned or under {args.runs} yet")
    if others:
        print(f"(and {others} shard(s) of other configs under {args.runs}: --all lists them)")
    if plan is not None and args.runs == RUNS_DIR:  # (the scores lie beside results/runs)
        from ..run.scoring_state import format_scoring_states, scoring_states

        print()
        print(format_scoring_states(scoring_states(plan)))


def recordings(args) -> None:
    from ..datasets.fetch import resolve_mirror
    from ..sources.recordings import loop_table

    print(
        "# Each recorded run of GeneGPT's: tasks (its files), read (those the mirror or\n"
        "# resources/upstream hold), max_calls and url_rule (the loop variants its files\n"
        "# show, one per variant: the cap of calls a question, `first` or `last` bracketed\n"
        "# URL), capped_at (the call counts where questions were cut), contradictions\n"
        "# (questions that fit neither rule, by the rule they contradict)"
    )
    print("recording\trun\ttasks\tread\tmax_calls\turl_rule\tcapped_at\tcontradictions")
    for row in loop_table(resolve_mirror(args.mirror)):
        if not row["read"]:
            print(f"{row['recording']}\t{row['run']}\t{row['tasks']}\t0\t\t\t\t")
            continue
        caps = "/".join(str(cap or "-") for cap, _ in row["variants"])
        rules = "/".join(rule for _, rule in row["variants"])
        capped = ",".join(map(str, row["capped_at"])) or "-"
        contradictions = " ".join(f"{rule}:{n}" for rule, n in row["contradictions"].items())
        print(
            f"{row['recording']}\t{row['run']}\t{row['tasks']}\t{row['read']}\t{caps}\t{rules}"
            f"\t{capped}\t{contradictions}"
        )


def cache(args) -> None:
    """What the tool and model caches hold, read without writing (SQLite read-only);
    with ``--import``, first the tool replies of another machine's report."""
    import sqlite3

    if args.import_file:
        exported = Path(args.import_file)
        if _is_code_export(exported):
            import_code_executions(exported, Path(args.code))
        else:
            import_tool_replies(exported, Path(args.tools))

    from tabulate import tabulate

    def query(path: Path, sql: str) -> list:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return conn.execute(sql).fetchall()

    for path, sql, headers in (
        (
            Path(args.tools),
            "SELECT origin, COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM replies"
            " GROUP BY origin ORDER BY origin",
            ["tool replies from", "replies", "bytes"],
        ),
        (
            Path(args.code),
            "SELECT origin, COUNT(*), COALESCE(SUM(LENGTH(files)), 0) FROM executions"
            " GROUP BY origin ORDER BY origin",
            ["code executions from", "executions", "scratch bytes"],
        ),
        (
            Path(args.models),
            MODEL_CACHE_SQL,
            ["model", "identity (sha256)", "completions", "first", "last"],
        ),
    ):
        if not path.is_file():
            print(f"{path}: none yet")
            continue
        if sql is MODEL_CACHE_SQL:
            tables = {name for (name,) in query(path, "SELECT name FROM sqlite_master")}
            rows = query(path, sql if "identities" in tables else OLD_MODEL_CACHE_SQL)
            rows = [(describe_identity(*row[:2]), row[2][:16], *row[3:]) for row in rows]
        else:
            rows = query(path, sql)
        size = path.stat().st_size / 1e6
        print(f"{path} ({size:.1f} MB)")
        print(tabulate(rows, headers=headers, disable_numparse=True) if rows else "(empty)")
        if "replies" in sql:
            (requests,) = query(path, "SELECT COUNT(*) FROM requests")[0]
            print(f"{requests} request(s) left this machine for these replies (table requests)")
        print()


# Each model's calls, with the config names and the identity it was stored under.
MODEL_CACHE_SQL = """
SELECT (SELECT group_concat(name, ', ') FROM identity_names n WHERE n.digest = c.identity),
       (SELECT identity FROM identities i WHERE i.digest = c.identity),
       c.identity, COUNT(*), MIN(c.created_at), MAX(c.created_at)
FROM completions c GROUP BY c.identity ORDER BY 4 DESC
"""
# A cache written before identities were kept: the digest alone.
OLD_MODEL_CACHE_SQL = """
SELECT NULL, NULL, identity, COUNT(*), MIN(created_at), MAX(created_at)
FROM completions GROUP BY identity ORDER BY 4 DESC
"""


def describe_identity(names: str | None, identity_json: str | None) -> str:
    """A model in the cache's listing: the config's names for it and what answers."""
    if identity_json is None:
        return names or "(not recorded)"
    identity = json.loads(identity_json)
    what = identity.get("model") or identity.get("package") or identity.get("source")
    facts = [identity.get("backend"), what]
    if identity.get("api"):
        facts.append(f"{identity['api']} API")
    if "chat_template" in identity:
        facts.append("chat template" if identity["chat_template"] else "no chat template")
    if identity.get("max_tokens"):
        facts.append(f"at most {identity['max_tokens']} tokens a completion")
    return f"{names or '?'} ({', '.join(str(f) for f in facts if f)})"


def _is_code_export(exported: Path) -> bool:
    """Whether ``exported`` is a ``code_executions.jsonl`` (its lines hold an execution)."""
    with exported.open(encoding="utf-8") as lines:
        first = next((line for line in lines if line.strip()), "")
    try:
        return "outcome" in json.loads(first)
    except (ValueError, TypeError):
        return False


def import_code_executions(exported: Path, code: Path) -> None:
    """Put a report's ``code_executions.jsonl`` in the code cache ``code`` (executions
    already there are kept): the same config then executes none of them again."""
    from ..errors import DataError
    from ..gateway.code import ExecutionCache

    lines = []
    for number, line in enumerate(exported.read_text(encoding="utf-8").splitlines(), 1):
        try:
            entry = json.loads(line)
            if not {"key", "outcome", "files", "files_sha256"} <= set(entry):
                raise ValueError("missing fields")
        except (ValueError, TypeError) as exc:
            why = f"not an exported code execution ({exc})"
            raise DataError(f"{exported}:{number}: {why}") from None
        lines.append(entry)
    try:
        stored, kept = ExecutionCache(code).import_lines(lines, exported.name)
    except ValueError as exc:
        raise DataError(f"{exported}: {exc}") from None
    print(f"{exported}: {len(lines)} code executions, {stored} new in {code}")


def import_tool_replies(exported: Path, tools: Path) -> None:
    """Put a report's ``tool_replies.jsonl`` in the tool cache ``tools`` (replies
    already there are kept): the same config then runs offline with those replies."""
    from ..errors import DataError
    from ..tools.cache import ReplyCache, reply_from_json

    replies = []
    for number, line in enumerate(exported.read_text(encoding="utf-8").splitlines(), 1):
        try:
            replies.append(reply_from_json(json.loads(line), origin_prefix="import:"))
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{exported}:{number}: not an exported tool reply ({exc})") from None
    tools.parent.mkdir(parents=True, exist_ok=True)
    added = ReplyCache(tools).put_many(replies, replace=False)
    print(f"{exported}: {len(replies)} tool replies, {added} new in {tools}")
