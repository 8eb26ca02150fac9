"""What produced the report, for machines: ``ro-crate-metadata.json`` makes the report
directory an RO-Crate 1.3 (https://w3id.org/ro/crate), written with ro-crate-py
(``rocrate``), that describes its runs as the Process Run Crate profile does (one
``CreateAction`` per process). It does not claim that profile: its 0.5 version is
defined on RO-Crate 1.1, and the validator checks this crate against 1.3.

The crate holds the report's files (each with its sha256) and describes:
- one ``CreateAction`` per run (model x method): its model and helixbench as
  instruments, the config and the demonstration snapshots it used as objects, the
  per-question scores as result, and when its last question finished;
- one ``CreateAction`` for the report itself, whose objects are the upstream files
  (by URL, with the sha256 found on disk and the one pinned) and the config;
- helixbench (version, commit), Python and the package versions it ran with, and
  each model's identity (backend, served id or file digests) as properties.

Its date is the last run record's, not the clock's: the same results give the same
crate.
"""

from __future__ import annotations

import json
import mimetypes
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from ...config.plan import Plan, RunTask
from ...digests import sha256_file

HELIXBENCH_URL = "https://github.com/helixbench/helixbench"
CRATE_FILE = "ro-crate-metadata.json"
CONFIG_FILE = "config.json"
# The captions of the files Snakemake's own report shows (a clone's workflow/report/).
REPORT_CAPTIONS = Path(__file__).resolve().parents[4] / "workflow" / "report"

FORMATS = {
    ".csv": "text/csv",
    ".md": "text/markdown",
    ".json": "application/json",
    ".html": "text/html",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".parquet": "application/vnd.apache.parquet",
    ".gz": "application/gzip",  # (a long table's CSV: paths.LONG_TABLES)
    ".js": "text/javascript",
    ".jsonl": "application/jsonl",
    ".eval": "application/zip",  # Inspect's eval log: a zip of JSON files
}
# What each report file is, for the crate (the captioned ones: workflow/report/*.rst).
DESCRIPTIONS = {
    "index.html": "the report's page: opens from disk; it reads each run's questions from "
    "results/summaries/",
    "errors.csv.gz": "per run and task: questions ended in an error, tool calls, how answered",
    "agents.csv": "per agent run: how its questions ended, its gateway calls, routes and caps",
    "table2.csv": "GeneGPT's Table 2 layout: GeneTuring per task beside the paper's figures",
    "genehop.md": "GeneHop per task beside the paper's figures (Table 3), as text",
    "provenance.json": "what produced the report: versions, config, snapshots, checksums, models",
    "tool_replies.jsonl": "the tool replies the runs read, to replay them offline elsewhere",
    "code_executions.jsonl": "the code tools' executions the runs read or made",
    "question_scores.parquet": "per-question scores: one row per run, question and metric",
    "leaderboard.svg": "the leaderboard figure (SVG)",
    "ablation.svg": "the ablation figure (SVG)",
    "percentile.svg": "the gene-set percentile figure (SVG)",
    "geneagent_paper.csv": "GeneAgent's paper beside our scoring of its own generations",
    "hu_ranks.csv": "Hu et al.'s own similarity ranks of the true names beside our percentile",
    "robustness.svg": "the robustness figure (SVG)",
}


def _description(name: str) -> str:
    """What a report file is: its caption's text, the table above, or by its place."""
    parts = name.split("/")
    if parts[0] == "runs":
        run = f"{parts[1]} / {Path(name).stem}"
        return f"the questions, answers, scores and transcripts of {run}, for the page"
    if parts[0] == "exports":
        what = {
            ".eval": "an Inspect AI eval log",
            ".jsonl": "an Every Eval Ever instance file",
            ".json": "an Every Eval Ever aggregate",
        }.get(Path(name).suffix, "an export")
        return f"{what} of the run {parts[1]} / {parts[2]}"
    if name in DESCRIPTIONS:
        return DESCRIPTIONS[name]
    caption = REPORT_CAPTIONS / f"{Path(name).stem}.rst"
    if caption.is_file():
        return " ".join(caption.read_text(encoding="utf-8").split())
    return f"the report's {name}"


def _format(name: str) -> str:
    suffix = Path(name).suffix
    return FORMATS.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def _date(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in text)


def licence_urls(upstream: list[dict]) -> dict[str, str]:
    """Repository -> the URL of its pinned licence file, for each repository the
    report's upstream files come from that pins one."""
    from ...datasets.upstream import RAW_HOST, manifest

    repos = {}
    for file in upstream:
        url = urlsplit(file["url"])
        if url.netloc == RAW_HOST:  # /<owner>/<name>/<commit>/<path>
            _, owner, name, commit = url.path.split("/", 4)[:4]
            repos.setdefault(f"{owner}/{name}", commit)
    found = {}
    for entry in manifest().values():
        if entry.path.upper().startswith("LICENSE") and repos.get(entry.repo) == entry.commit:
            found[entry.repo] = entry.url
    return {repo: found[repo] for repo in repos if repo in found}


def write_crate(
    out_dir: Path,
    files: list[str],
    plan: Plan,
    facts: dict[RunTask, dict],
    prov: dict,
) -> Path:
    """Write ``out_dir/ro-crate-metadata.json`` over ``files`` (names in ``out_dir``)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.model.softwareapplication import SoftwareApplication
    from rocrate.rocrate import ROCrate

    out_dir = Path(out_dir)
    (out_dir / CONFIG_FILE).write_text(
        json.dumps(prov["config"], sort_keys=True, separators=(",", ":"))
    )
    finished = {
        run.label: max(
            (facts[t]["finished_at"] for t in run.tasks if facts[t]["finished_at"]), default=None
        )
        for run in plan.runs
    }
    last = max((t for t in finished.values() if t is not None), default=None)

    crate = ROCrate()

    def entity(identifier, properties):
        return crate.add(ContextEntity(crate, identifier, properties))

    root = crate.root_dataset
    crate.name = "helixbench report"
    crate.description = (
        "Scores of tool-augmented language models on genomics questions, with what "
        "produced them: runs, models, upstream files, software."
    )
    root["datePublished"] = _date(last) or datetime.now(UTC).isoformat(timespec="seconds")
    # The report derives from its upstream files, each under its repository's licence:
    # those licences by the URL of their pinned file (a repository without one states
    # no terms, and is named in the description).
    licences = [
        entity(url, {"@type": "CreativeWork", "name": f"{repo} license"})
        for repo, url in licence_urls(prov["upstream"]).items()
    ]
    root["license"] = licences or entity(
        "#license",
        {"@type": "CreativeWork", "name": "Terms of the upstream files"},
    )
    publisher = prov["config"].get("report", {}).get("publisher")
    if publisher:  # the user's identity: only they can state it (report.publisher)
        root["publisher"] = entity(
            publisher["id"],
            {"@type": publisher.get("type", "Person"), "name": publisher["name"]},
        )
    root["usageInfo"] = (
        "The report derives from the upstream files it lists (benchmarks, recorded runs, "
        "published outputs), each under its own repository's license; helixbench adds no "
        "terms of its own."
    )

    # Software: helixbench, Python and the packages it ran with.
    helixbench = prov["helixbench"]
    packages = [
        crate.add(
            SoftwareApplication(
                crate,
                f"https://pypi.org/project/{name}/{version}/",
                {"name": name, "version": version, "url": f"https://pypi.org/project/{name}/"},
            )
        )
        for name, version in prov["packages"].items()
        if version
    ]
    python = crate.add(
        SoftwareApplication(
            crate,
            "#python",
            {"name": "Python", "version": prov["python"], "url": "https://www.python.org/"},
        )
    )
    tool = crate.add(
        SoftwareApplication(
            crate,
            "#helixbench",
            {
                "name": "helixbench",
                "version": helixbench["version"],
                "identifier": helixbench.get("commit") or "unknown",
                "url": HELIXBENCH_URL,
                "softwareRequirements": [python, *packages],
            },
        )
    )

    # Files of the report, each with its digest.
    by_name = {}
    for name in [*files, CONFIG_FILE]:
        path = out_dir / name
        properties = {
            "name": name,
            "encodingFormat": _format(name),
            "contentSize": str(path.stat().st_size),
            "sha256": sha256_file(path),
        }
        properties["description"] = _description(name)
        if name == CONFIG_FILE:
            properties["description"] = (
                f"the validated config (canonical JSON); config sha256 {prov['config_sha256']}"
            )
        by_name[name] = crate.add_file(path, dest_path=name, properties=properties)
    config = by_name[CONFIG_FILE]

    # Upstream files, by URL.
    upstream = [
        crate.add_file(
            file["url"],
            fetch_remote=False,
            validate_url=False,
            properties={
                "name": file["url"].rsplit("/", 1)[-1],
                "sha256": file["sha256"] or file["pinned"],
                "description": f"upstream file; pinned sha256 {file['pinned'] or 'none'}",
                "encodingFormat": _format(file["url"].rsplit("/", 1)[-1]),
                **({"contentSize": str(file["size"])} if file.get("size") is not None else {}),
            },
        )
        for file in prov["upstream"]
    ]

    # Models and their identities: one a recorded file for a replayed model, one in
    # all for a served or local one. Not SoftwareApplications (which need a URL and a
    # version): an API model has neither; its identity is what the server or the
    # file said it was.
    models = {}
    for name, identities in prov["models"].items():
        parts = []
        for i, identity in enumerate(identities):
            properties = [
                entity(
                    f"#model-{_slug(name)}-{i}-{_slug(key)}",
                    {
                        "@type": "PropertyValue",
                        "name": key,
                        "value": value if isinstance(value, str) else json.dumps(value),
                    },
                )
                for key, value in sorted(identity.items())
                if value is not None
            ]
            parts.append(
                entity(
                    f"#model-{_slug(name)}-{i}",
                    {
                        "@type": "CreativeWork",
                        "name": f"{name}: identity {i + 1} of {len(identities)}",
                        "additionalProperty": properties,
                    },
                )
            )
        models[name] = entity(
            f"#model-{_slug(name)}",
            {
                "@type": "CreativeWork",
                "name": name,
                "description": "a model of the config, as its runs identified it",
                "hasPart": parts,
            },
        )

    # Snapshots (by id) and the runs.
    snapshots = {}
    for snapshot_id in prov["snapshots"].values():
        if snapshot_id and snapshot_id not in snapshots:
            snapshots[snapshot_id] = entity(
                f"#snapshot-{_slug(snapshot_id)}",
                {
                    "@type": "CreativeWork",
                    "name": f"demonstration snapshot {snapshot_id}",
                    "identifier": snapshot_id,
                },
            )
    scores = by_name.get("question_scores.parquet")
    actions = []
    for run in plan.runs:
        used = {facts[t]["snapshot_id"] for t in run.tasks if facts[t]["snapshot_id"]}
        action = {
            "@type": "CreateAction",
            "name": f"run {run.label}",
            "instrument": [tool, *([models[run.model]] if run.model in models else [])],
            "object": [config, *(snapshots[s] for s in sorted(used) if s in snapshots)],
            "result": [scores] if scores else [],
        }
        if finished[run.label] is not None:
            action["endTime"] = _date(finished[run.label])
        actions.append(entity(f"#run-{_slug(run.model)}-{_slug(run.method)}", action))
    report = {
        "@type": "CreateAction",
        "name": "report",
        "instrument": [tool],
        "object": [config, *upstream],
        "result": [by_name[name] for name in files],
    }
    if last is not None:
        report["endTime"] = _date(last)
    actions.append(entity("#report", report))
    root["mentions"] = actions  # (each action referenced from the crate's root)
    crate.metadata.write(out_dir)
    return out_dir / CRATE_FILE
