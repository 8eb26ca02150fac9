"""Imported runs (published outputs of other systems) and the answer extractor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helixbench import paths
from helixbench.benchmarks import genehop, geneturing
from helixbench.config import ConfigError, build_plan, resolve_scoring
from helixbench.datasets.fetch import MIRROR_ENV, FetchError, fetch
from helixbench.datasets.questions import load_task_dict, write_questions
from helixbench.datasets.upstream import manifest
from helixbench.loopback.openai import OpenAIServer
from helixbench.paths import upstream_path
from helixbench.run.shard import run_shard
from helixbench.scoring import Scorers, extracted_score
from helixbench.scoring.extract import extract_answer, is_bare
from helixbench.scoring.genegpt import genegpt_score
from helixbench.scoring.run_scores import score_run
from helixbench.sources.labbench2 import pinned_reports
from helixbench.sources.published import SOURCES, coverage, load_items, resolve_source, task_file
from helixbench.sources.recordings import load_recording
from helixbench.transcripts import read_records


def _fetch_all(plan, mirror: Path, workdir: Path) -> None:
    """The plan's upstream files, fetched (verified) from the mirror into ``workdir``."""
    for file in plan.upstream_files():
        dest = workdir / upstream_path(file)
        if not dest.exists():
            fetch(file.url, dest, file.sha256, mirror=mirror, lock_file=workdir / "lock.tsv")


def _questions(workdir: Path) -> Path:
    questions = []
    for benchmark, file in {"geneturing": geneturing.FILE, "genehop": genehop.FILE}.items():
        questions += load_task_dict(benchmark, workdir / upstream_path(file))
    out = workdir / paths.QUESTIONS
    write_questions(questions, out)
    return out


def _run_and_score(plan, workdir: Path, model: str) -> list[dict]:
    run = plan.find(model, "imported")
    spec = json.loads(json.dumps(run.spec()))
    for task in spec["tasks"]:  # the plan's paths are relative to the workflow's directory
        task["imported"] = str(workdir / task["imported"])
    questions = _questions(workdir)
    shard = workdir / "shard.jsonl"
    run_shard(spec, 0, questions, shard)
    scores = workdir / "scores.jsonl"
    score_run(spec, questions, [shard], scores, plan.scoring)
    return read_records(shard), read_records(scores)


# Hand-checked: the final text, and what GeneGPT's upstream scorer and the extracted
# score give against our gold.
HAND_CHECKED = [
    # Upstream takes the last token of a location answer: "8" -> chr8, right as given.
    ("Gene location", "Answer: Chromosome 8", "chr8", 1.0, 1.0),
    # A wordy yes/no answer is 0 upstream, right once extracted (No -> NA).
    (
        "Protein-coding genes",
        "Answer: No, ATP5F1EP2 is not a protein-coding gene; it is an ATP synthase F1 "
        "subunit epsilon pseudogene 2.",
        "NA",
        0.0,
        1.0,
    ),
    ("Protein-coding genes", "Answer: No, it is a pseudogene", "NA", 0.0, 1.0),
    ("Multi-species DNA aligment", "Zebrafish (Danio rerio)", "zebrafish", 0.0, 1.0),
    ("Multi-species DNA aligment", "Answer: Caenorhabditis elegans", "worm", 1.0, 1.0),
    (
        "Gene SNP association",
        "Answer: The SNP rs563369098 is associated with the gene LINC01673, which is an "
        "uncharacterized long intergenic non-protein coding RNA.",
        "LINC01673",
        0.0,
        1.0,
    ),
    (
        "Gene alias",
        "Answer: ABLIM2\n\nNote: the first query returned another ID.",
        "ABLIM2",
        0.0,
        1.0,
    ),
    (
        "Human genome DNA aligment",
        "Answer: chr15:91950805-91950932",
        "chr15:91950805-91950932",
        1.0,
        1.0,
    ),
    (
        "Human genome DNA aligment",
        "The sequence maps to chromosome 6: 25,897,419-25,897,555 (GRCh38).",
        "chr6:25897419-25897555",
        0.0,
        1.0,
    ),
    (
        "Disease gene location",
        "Answer: The gene related to Siddiqi syndrome is FITM2, and its chromosome location "
        "is 20q13.12.",
        ["20q13.12"],
        0.0,
        1.0,
    ),
    # Wrong stays wrong: extraction finds the answer, it does not make it right.
    ("Gene location", "Answer: Chromosome 19", "chr8", 0.0, 0.0),
    ("Gene disease association", "Answer: VWF, SGO1", "SGO1", 1.0, 1.0),
    # No answer to find: unchanged.
    ("Gene location", "Answer: the gene could not be found in the database.", "chr2", 0.0, 0.0),
]


@pytest.mark.parametrize(("task", "text", "gold", "upstream", "extracted"), HAND_CHECKED)
def test_extracted_and_upstream_scores_on_hand_checked_answers(
    task, text, gold, upstream, extracted
):
    question = "Which gene is SNP rs563369098 associated with?"
    assert genegpt_score(task, text, gold, question) == upstream
    assert extracted_score(task, text, gold, question) == extracted


def test_extractor_leaves_bare_answers_alone():
    assert extract_answer("Gene alias", "Answer: PSMB10") == "Answer: PSMB10"
    assert extract_answer("Gene location", "Answer: X") == "Answer: X"
    assert is_bare("Gene disease association", "Answer: CFHR5, CFHD")
    assert extract_answer("Protein-coding genes", None) is None
    # The question's own symbol is never taken for the answer.
    text = "Answer: LMP10 is an alias; its official symbol is PSMB10."
    assert extract_answer("Gene alias", text, "What is the official gene symbol of LMP10?") == (
        "PSMB10"
    )


def test_extractor_keeps_its_promise_on_every_mirrored_recording(mirror):
    """Every mirrored GeneGPT recording, question by question: a bare answer scores as
    upstream scores it; any other never lower (scoring.extract states the promise)."""
    files = [f for f in manifest().values() if f.repo == "ncbi/GeneGPT" and "_results/" in f.path]
    checked = raised = 0
    for file in files:
        local = mirror / file.relpath
        if not local.is_file():
            continue
        task = file.path.rsplit("/", 1)[1].removesuffix(".json")
        for item in load_recording(local):
            upstream = genegpt_score(task, item.final_text, item.gold, item.question)
            extracted = extracted_score(task, item.final_text, item.gold, item.question)
            where = (file.path, item.question)
            if is_bare(task, item.final_text):
                assert extracted == upstream, where
            elif upstream is not None:
                assert extracted >= upstream, where
                raised += extracted > upstream
            checked += 1
    assert checked >= 1000  # 2 masks x 9 tasks + 2 GeneHop tasks, 50 each, at least
    # Mask 010000 (no demonstrations) answers in sentences; where mirrored, the
    # extractor credits some of them, e.g. 0.5 for a disease's genes named in a hint.
    rdta = "What are genes related to Distal renal tubular acidosis?"
    mask_010000 = mirror / manifest_path("010000", "Gene disease association")
    if mask_010000.is_file():
        item = next(i for i in load_recording(mask_010000) if i.question == rdta)
        task = "Gene disease association"
        assert genegpt_score(task, item.final_text, item.gold) == 0
        assert extracted_score(task, item.final_text, item.gold, item.question) == 0.5
        assert raised >= 1


def manifest_path(mask: str, task: str) -> str:
    return next(
        f.relpath
        for f in manifest().values()
        if f.repo == "ncbi/GeneGPT" and f.path == f"geneturing_results/{mask}/{task}.json"
    )


def test_extracted_never_scores_a_wordy_answer_below_upstream():
    # Upstream gives half credit for the chromosome before the first ":"; the first
    # range named lies on another chromosome.
    task, text, gold = "Human genome DNA aligment", "chr8: perhaps chr9:100-200", "chr8:300-400"
    assert genegpt_score(task, text, gold) == 0.5
    assert extract_answer(task, text) == "chr9:100-200"
    assert extracted_score(task, text, gold) == 0.5


def _imported_config(*models: str, **sources) -> dict:
    return {
        "models": {
            m: {
                "backend": "imported",
                "source": sources[m] if m in sources else SOURCES_BY_MODEL[m],
            }
            for m in models
        },
        "runs": [{"models": list(models), "method": "imported", "shards": 1}],
        "benchmarks": ["geneturing", "genehop"],
        "scoring": {},
    }


SOURCES_BY_MODEL = {
    "qwen32b": "openbiollm/pre_qwen32b",
    "qwen32b-slim": "openbiollm/pre_qwen32b_slim",
    "gpt41-tools": "hamzameer/gpt41-tools",
}


def test_openbiollm_import_scores_as_upstream_rules_give(mirror, tmp_path):
    config = _imported_config("qwen32b")
    plan = build_plan(config, mirror)
    _fetch_all(plan, mirror, tmp_path)
    # "sequence gene alias" is published but not mirrored: left out, with a warning.
    assert [n["message"].split(":")[0] for n in plan.notes if n["level"] == "warning"] == [
        "sequence gene alias"
    ]
    records, scores = _run_and_score(plan, tmp_path, "qwen32b")
    assert len(records) == 11 * 50
    by = {(s["question_id"], s["metric"]): s["score"] for s in scores}
    # Hand-checked items of the published file (golds from our benchmark file).
    assert by[("geneturing.gene-location.000", "genegpt")] == 1.0  # "Answer: Chromosome 8"
    first_coding = "geneturing.protein-coding-genes.000"  # "Answer: No, ATP5F1EP2 is not ..."
    assert (by[(first_coding, "genegpt")], by[(first_coding, "extracted")]) == (0.0, 1.0)
    # Per task, the upstream scorer on the file's own final texts, matched by question.
    ours = {
        q.text: q for q in load_task_dict("geneturing", tmp_path / upstream_path(geneturing.FILE))
    }
    for task in ("Gene location", "Protein-coding genes", "Multi-species DNA aligment"):
        file = task_file(resolve_source("openbiollm/pre_qwen32b", "x"), "geneturing", task)
        data = json.loads((mirror / file.relpath).read_text())
        expected = [genegpt_score(task, final, ours[q].gold) for q, _gold, final, _ in data]
        got = [s["score"] for s in scores if s["task"] == task and s["metric"] == "genegpt"]
        assert sorted(got) == sorted(expected) and len(got) == 50
    # Tool calls and their replies enter the record like our own runs'.
    with_tools = [r for r in records if any(e["type"] == "tool" for e in r["events"])]
    assert with_tools
    tool = next(e for e in with_tools[0]["events"] if e["type"] == "tool")
    assert tool["data"]["url"].startswith("https://") and tool["data"]["origin"] == "imported"
    assert records[0]["model_identity"]["source"] == "openbiollm/pre_qwen32b"


def test_task_dict_import_and_its_wordy_answers(mirror, tmp_path):
    plan = build_plan(_imported_config("gpt41-tools"), mirror)
    _fetch_all(plan, mirror, tmp_path)
    records, scores = _run_and_score(plan, tmp_path, "gpt41-tools")
    assert len(records) == 12 * 50  # one file per benchmark holds every task
    assert all(r["error"] is None for r in records)
    alias = [s for s in scores if s["task"] == "sequence gene alias"]
    assert {s["metric"] for s in alias} == {"alias_recall"}
    # The list answers ("answer" is the source's gold; "prediction" the system's) are
    # joined; golds are ours.
    event = records[0]["events"][0]
    assert event["data"]["thoughts"] and event["data"]["cache"] == "imported"


def _custom_source(tmp_path: Path, mirror: Path, items: dict) -> tuple[Path, dict]:
    """A tiny task_dict source in a mirror of its own (the benchmarks linked in)."""
    own = tmp_path / "mirror"
    (own / "raw.githubusercontent.com").mkdir(parents=True)
    # The question table's files: every benchmark's.
    for owner in (mirror / "raw.githubusercontent.com").iterdir():
        (own / "raw.githubusercontent.com" / owner.name).symlink_to(owner)
    commit = "0123456789abcdef0123456789abcdef01234567"
    path = own / "raw.githubusercontent.com" / "someone" / "published" / commit / "out" / "gt.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(items))
    digest = subprocess.run(
        ["sha256sum", str(path)], capture_output=True, text=True
    ).stdout.split()[0]
    source = {
        "repo": "someone/published",
        "commit": commit,
        "format": "task_dict",
        "files": {"geneturing": "out/gt.json"},
        "sha256": {"out/gt.json": digest},
        "model": "Some model",
        "claimed": {"geneturing": {"score": 0.9, "where": "their README"}},
    }
    return own, source


def test_a_source_described_in_config_counts_what_does_not_match(mirror, tmp_path):
    items = {
        "Gene alias": {
            "What is the official gene symbol of LMP10?": {"answer": "x", "prediction": "PSMB10"},
            "What is the official gene symbol of NOT-OURS?": {"answer": "x", "prediction": "A"},
        },
        "Human genome DNA alignment": {},  # another repository's spelling of our task
    }
    own, source = _custom_source(tmp_path, mirror, items)
    config = _imported_config("mine", mine=source)
    config["benchmarks"] = ["geneturing"]
    plan = build_plan(config, own)
    _fetch_all(plan, own, tmp_path)
    records, scores = _run_and_score(plan, tmp_path, "mine")
    alias = [r for r in records if r["task"] == "Gene alias"]
    missing = [r for r in alias if r["error"] == "missing_in_source"]
    assert len(alias) == 50 and len(missing) == 49  # kept, scored as misses
    got = {s["question_id"]: s["score"] for s in scores if s["metric"] == "genegpt"}
    assert got["geneturing.gene-alias.000"] == 1.0
    file = tmp_path / plan.find("mine", "imported").tasks[0].imported_path
    loaded, duplicates = load_items(file, "task_dict", "Gene alias")
    ours = [
        q.text
        for q in load_task_dict("geneturing", tmp_path / upstream_path(geneturing.FILE))
        if q.task == "Gene alias"
    ]
    assert coverage(loaded, ours, duplicates) == {
        "questions": 50,
        "source_items": 2,
        "matched": 1,
        "missing": 49,
        "unmatched": 1,
        "duplicates": 0,
    }


def test_fetch_command_takes_a_config_pin_and_names_a_bad_checksum(mirror, tmp_path):
    own, source = _custom_source(tmp_path, mirror, {"Gene alias": {}})
    url = f"https://raw.githubusercontent.com/someone/published/{source['commit']}/out/gt.json"
    out = tmp_path / "work" / paths.UPSTREAM_DIR / url.removeprefix("https://")
    out.parent.mkdir(parents=True)
    command = [sys.executable, "-m", "helixbench", "fetch", str(out.relative_to(tmp_path / "work"))]
    command += ["--mirror", str(own), "--lock", "lock.tsv", "--url", url]
    env = {k: v for k, v in os.environ.items() if k != MIRROR_ENV}  # --mirror, not the env's
    ok = subprocess.run(
        [*command, "--sha256", source["sha256"]["out/gt.json"]],
        cwd=tmp_path / "work",
        capture_output=True,
        text=True,
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    out.unlink()
    bad = subprocess.run(
        [*command, "--sha256", "0" * 64],
        cwd=tmp_path / "work",
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode != 0 and "checksum mismatch for " + url in bad.stderr
    assert not out.exists()
    with pytest.raises(FetchError, match="checksum mismatch"):
        fetch(url, out, "0" * 64, mirror=own)


def test_import_config_errors_name_the_key(mirror):
    with pytest.raises(ConfigError, match=r"models.x.source: unknown source 'nope'"):
        build_plan(_imported_config("x", x="nope"), mirror)
    config = _imported_config("qwen32b")
    config["runs"][0]["method"] = "genegpt-slim"
    with pytest.raises(ConfigError, match="takes the method 'imported'"):
        build_plan(config, mirror)
    bad = {
        "repo": "a/b",
        "commit": "0" * 40,
        "format": "genegpt",
        "files": {"geneturing": "x.json"},
        "model": "m",
    }
    with pytest.raises(
        ConfigError, match=r"files.geneturing: a genegpt-format path needs \{task\}"
    ):
        build_plan(_imported_config("x", x=bad), mirror)


def test_every_known_source_resolves_against_the_manifest():
    for name in SOURCES:
        source = resolve_source(name, "x")
        if source["format"] == "bixbench":  # GPT-4o's six files, Claude's three (v1)
            found = [task_file(source, b, t) for b, tasks in source["files"].items() for t in tasks]
            assert sum(f is not None for f in found) == (6 if "gpt-4o" in name else 3), name
            continue
        if source["format"] == "labbench2":  # its paper's reports, bare and with tools
            for flags in ("", "tools,high"):
                assert len(pinned_reports(source["system"], flags)) == 19, (name, flags)
            continue
        if "genesets" in source["files"]:  # GeneAgent's (MSigDB, NeST), Hu et al.'s
            found = [task_file(source, "genesets", t) for t in source["files"]["genesets"]]
            assert len(found) in (1, 2, 3), name
        else:
            wanted = ("Gene alias", "Human genome DNA aligment")
            found = [task_file(source, "geneturing", t) for t in wanted]
        assert all(found), name  # "alignment" spellings resolve to our task names


def test_model_extractor_through_the_registry(tmp_path):
    with OpenAIServer() as server:
        spec = {
            "backend": "openai",
            "model": "ex",
            "base_url": server.base_url,
            "api_key_env": None,
        }
        server.state.script.extend(["No", "NONE"])
        scoring = resolve_scoring(
            {
                "models": {"ex": spec},
                "scoring": {
                    "default": ["genegpt", "model_extracted"],
                    "extractor": {"model": "ex"},
                },
            }
        )
        scorer = Scorers(scoring, {"ex": spec}, model_cache=tmp_path / "m.sqlite").get(
            "model_extracted"
        )
        wordy = "Answer: It is a pseudogene, so not protein-coding."
        assert scorer("Protein-coding genes", wordy, "NA", "Is X a protein-coding gene?") == 1.0
        assert len(server.state.received) == 1
        assert wordy in server.state.received[0][1]["prompt"]
        # A bare answer needs no call; a reply of NONE leaves the text as it was.
        assert scorer("Protein-coding genes", "Answer: Yes", "TRUE") == 1.0
        assert scorer("Gene location", "Answer: somewhere", "chr1") == 0.0
        assert len(server.state.received) == 2
        assert scorer("SNP gene function", "text", "gold") is None  # not an upstream task
    with pytest.raises(ConfigError, match="scoring.extractor.model"):
        resolve_scoring({"models": {}, "scoring": {"default": ["model_extracted"]}})


def test_report_shows_a_sources_fields_as_text_not_markup():
    """The config supplies an imported source's name, model, prompt, citation and
    evaluator: report.md escapes them as the HTML report does."""
    from helixbench.report.page.markdown import _imported_markdown

    hostile = "[click](https://evil.example) <img src=x onerror=alert(1)> **bold** | x\n# h"
    row = {
        "run": "q / imported",
        "benchmark": "geneturing",
        "model": hostile,
        "prompt": hostile,
        "cite": hostile,
        "commit": "d2d26e0e8308ff1fa0afc96a1dfff5e2af1190de",
        "source": hostile,
        "evaluator": hostile,
        "claimed": 0.5,
        "claimed_where": hostile,
        "extracted": 0.8,
        "genegpt": 0.7,
    }
    import pandas as pd

    imports = pd.DataFrame(
        [{"run": "q / imported", "benchmark": "geneturing", "questions": 1, "matched": 1,
          "missing": 0, "unmatched": 0, "duplicates": 0}]
    )  # fmt: skip
    text = _imported_markdown([row], imports)
    first = text.splitlines()[0]
    assert "<img" not in text and "](https://evil" not in text and "**bold**" not in text
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in first and "\\[click\\]" in first
    assert "\n# h" not in text  # a field cannot start a heading on its own line
