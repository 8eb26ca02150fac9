"""Published outputs of other systems on our questions, imported as runs.

A source is a set of files at a pinned commit of a public repository, in one of
three formats:

- ``genegpt``: GeneGPT's recording format, one file per task, a list of
  ``[question, gold, final_text, steps]`` (ielab/OpenBioLLM's runs);
- ``task_dict``: one file per benchmark, ``{task: {question: {answer, thoughts,
  prediction}}}`` where ``prediction`` is the system's answer and ``answer`` the
  source's gold (hamzameer/GeneGPT-Tool-use-in-LLMs);
- ``geneagent``: GeneAgent's outputs, one text file per gene-set dataset, a block
  per set (:mod:`.geneagent_outputs`: how blocks are read and paired with sets);
- ``hu``: Hu et al.'s processed runs, a TSV row per set with the set's genes at each
  contamination level and, per level, the model's ``<model>_<level> Name``,
  ``Analysis`` and ``Score`` (its own confidence) columns;
- ``labbench2``: LABBench2's reports (:mod:`.labbench2`), one a system, tag and mode,
  with its retries: the pinned ones of its paper (by ``system``; the method's
  ``flags`` pick its run with tools), or a user's own run's (``reports``: task ->
  local paths, in the order its retries came), matched to our questions by id;
- ``bixbench``: BixBench's graded CSVs (:mod:`.bixbench`), one a version and mode, the
  pinned baselines of GPT-4o and Claude 3.5 Sonnet or a user's own (``reports``: task
  -> local path), matched by BixBench's question ids.

Questions are matched to ours verbatim (gene sets: by the alignment of
:mod:`.geneagent_outputs`); golds always come from our benchmark files. A source's
``files`` maps a benchmark to a path (``{task}`` in it for one file a task) or to
a ``{task: path}`` map. :data:`SOURCES` names the published runs we know; a config may describe
any other run in these formats inline, with the sha256 of files outside the
pinned manifest.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..benchmarks.genesets import HU_TASKS
from ..datasets.jsonfiles import read_json, read_text
from ..datasets.upstream import HU_COMMIT, HU_REPO, UNKNOWN, UpstreamFile, manifest
from .geneagent_outputs import align, read_blocks

FORMATS = ("genegpt", "task_dict", "geneagent", "hu", "labbench2", "bixbench")
LOCAL_FORMATS = ("labbench2", "bixbench")  # a user's own run's files, by path

# Other repositories' spellings of our (upstream GeneGPT's) task names.
SPELLINGS = {
    "Human genome DNA aligment": ("Human genome DNA alignment",),
    "Multi-species DNA aligment": ("Multi-species DNA alignment",),
}
_CANONICAL = {alt: task for task, alts in SPELLINGS.items() for alt in alts}

OPENBIOLLM = {
    "repo": "ielab/OpenBioLLM",
    "commit": "d2d26e0e8308ff1fa0afc96a1dfff5e2af1190de",
    "format": "genegpt",
    "evaluator": "OpenBioLLM's pre_evaluate.py (rules plus GPT grading of some tasks)",
    "cite": "ielab/OpenBioLLM, https://github.com/ielab/OpenBioLLM",
}
HAMZAMEER = {
    "repo": "hamzameer/GeneGPT-Tool-use-in-LLMs",
    "commit": "8d559d0548e5de408035ee6556e28ea1ebe7f7ce",
    "format": "task_dict",
    "cite": "hamzameer/GeneGPT-Tool-use-in-LLMs, https://github.com/hamzameer/GeneGPT-Tool-use-in-LLMs",
}


def _openbiollm(run: str, model: str, prompt: str) -> dict:
    base = f"openbiollm/results/{run}"
    return {
        **OPENBIOLLM,
        "model": model,
        "prompt": prompt,
        "files": {b: f"{base}/{b}/{{task}}.json" for b in ("geneturing", "genehop")},
        # The source's own score: the overall average its evaluator wrote.
        "claimed": {
            b: {
                "file": f"{base}/pre_{b}_result_extracted_scored.json",
                "key": "statistics.overall_statistics.average_score",
            }
            for b in ("geneturing", "genehop")
        },
    }


def _hamzameer(run: str, model: str, prompt: str) -> dict:
    return {
        **HAMZAMEER,
        "model": model,
        "prompt": prompt,
        "files": {b: f"results/{b}_{run}.json" for b in ("geneturing", "genehop")},
    }


GENEAGENT_PAPER = "Wang et al., GeneAgent, Nature Methods 2025; ncbi-nlp/GeneAgent"


def _geneagent(commit: str, model: str, prompt: str, files: dict) -> dict:
    return {
        "repo": "ncbi-nlp/GeneAgent",
        "commit": commit,
        "format": "geneagent",
        "model": model,
        "prompt": prompt,
        "files": {"genesets": files},
        "cite": GENEAGENT_PAPER,
    }


HU_PAPER = (
    "Hu et al., Evaluation of large language models for discovery of gene set function, "
    "Nature Methods 2025; idekerlab/llm_evaluation_for_gene_set_interpretation"
)
HU_PROMPT = "Hu et al.'s prompt (a name, an analysis and a confidence score)"
# Task -> the genes column of its contamination level (its answers' columns follow).
HU_LEVELS = {task: genes for task, (genes, _compared, _level) in HU_TASKS.items()}


def _hu(model: str, file: str, tasks: tuple[str, ...], ranks: str) -> dict:
    base = "data/GO_term_analysis"
    return {
        "repo": HU_REPO,
        "commit": HU_COMMIT,
        "format": "hu",
        "model": model,
        "prompt": HU_PROMPT,
        "files": {"genesets": dict.fromkeys(tasks, f"{base}/{file}")},
        # Their own background percentile of each set's true name (SapBERT, their GO
        # background), of the real genes' name: the report sets ours beside it.
        "ranks": {tasks[0]: f"{base}/{ranks}"},
        "cite": HU_PAPER,
    }


def _hu_compared(model: str, file: str) -> dict:
    compare = "model_compare/{}LLM_processed_model_compare_100set_" + file + ".tsv"
    return _hu(model, compare.format(""), HU_COMPARED, compare.format("sim_rank_"))


HU_COMPARED = tuple(task for task, (_genes, compared, _level) in HU_TASKS.items() if compared)
QWEN_PROMPT = "GeneGPT prompt as modified by OpenBioLLM"
BIXBENCH_PAPER = "BixBench (FutureHouse, 2025); Future-House/BixBench, its zero-shot baselines"


def _bixbench(model: str, name: str) -> dict:
    from ..benchmarks.bixbench import COMMIT, MCQ, OPEN, REPO, task_path

    return {
        "repo": REPO,
        "commit": COMMIT,
        "format": "bixbench",
        "files": {
            "bixbench-mcq": {t: task_path(t, model) for t in MCQ},
            "bixbench-open": {t: task_path(t, model) for t in OPEN},
        },
        "published_as": model,
        "model": name,
        "prompt": "BixBench's zero-shot prompts (temperature 1.0)",
        "cite": BIXBENCH_PAPER,
    }


LABBENCH2_PAPER = "LABBench2 (FutureHouse and Edison Scientific, 2026); EdisonScientific/labbench2"


def _labbench2(system: str, model: str) -> dict:
    from ..benchmarks.labbench2 import COMMIT, REPO

    return {
        "repo": REPO,
        "commit": COMMIT,
        "format": "labbench2",
        "system": system,
        "model": model,
        "prompt": "LABBench2's harness (its native SDK runner; with the method's flags)",
        "cite": LABBENCH2_PAPER,
    }


SOURCES = {
    "openbiollm/pre_qwen32b": _openbiollm(
        "pre_qwen32b", "Qwen2.5-32B (Ollama, temperature 0)", f"{QWEN_PROMPT}, full"
    ),
    "openbiollm/pre_qwen32b_slim": _openbiollm(
        "pre_qwen32b_slim", "Qwen2.5-32B (Ollama, temperature 0)", f"{QWEN_PROMPT}, slim"
    ),
    "openbiollm/pre_qwen72b": _openbiollm(
        "pre_qwen72b", "Qwen2.5-72B (Ollama, temperature 0)", f"{QWEN_PROMPT}, full"
    ),
    "openbiollm/pre_qwen72b_slim": _openbiollm(
        "pre_qwen72b_slim", "Qwen2.5-72B (Ollama, temperature 0)", f"{QWEN_PROMPT}, slim"
    ),
    "hamzameer/gpt41-tools": _hamzameer(
        "azure_gpt41_tools", "GPT-4.1 (Azure)", "function calling to NCBI E-utils and BLAST"
    ),
    "hamzameer/gpt41-mini-tools": _hamzameer(
        "azure_gpt41_mini_tools",
        "GPT-4.1-mini (Azure)",
        "function calling to NCBI E-utils and BLAST",
    ),
    "hamzameer/gpt41-no-tools": _hamzameer("azure_gpt41_no_tools", "GPT-4.1 (Azure)", "no tools"),
    # GeneAgent's paper's own generations, at commits no longer on its history.
    "geneagent/gpt-4": _geneagent(
        "db84e85a1c9e553f40ee5586d056d3afba644d35",
        "GPT-4",
        "Hu et al.'s prompt (no verification)",
        {
            "MSigDB": "Outputs/GPT-4/MsigDB_Response_GPT4.txt",
            "NeST": "Outputs/GPT-4/NeST_Response_GPT4.txt",
        },
    ),
    "geneagent/cascade": _geneagent(
        "6a1647bf43311acbcd00ebd56e954173b060720d",
        "GPT-4",
        "GeneAgent's cascade (self-verification with its eight APIs)",
        {
            "MSigDB": "Outputs/GeneAgent/Cascade/MsigDB_Final_Response_GeneAgent.txt",
            "NeST": "Outputs/GeneAgent/Cascade/NeST_Final_Response_GeneAgent.txt",
        },
    ),
    # Hu et al.'s runs: GPT-4 on their 1,000 GO sets, five models on 100 of them at
    # three contamination levels.
    "hu/gpt-4-1000": _hu(
        "GPT-4",
        "LLM_processed_selected_1000_go_terms.tsv",
        ("Hu GO 1000",),
        "simrank_LLM_processed_selected_1000_go_terms.tsv",
    ),
    "hu/gpt-4": _hu_compared("GPT-4", "gpt_4"),
    "hu/gpt-3.5": _hu_compared("GPT-3.5", "gpt_35"),
    "hu/gemini-pro": _hu_compared("Gemini Pro", "gemini_pro"),
    "hu/llama2-70b": _hu_compared("Llama 2 70B", "llama2_70b"),
    "hu/mixtral": _hu_compared("Mixtral Instruct", "mixtral_instruct"),
    # BixBench's zero-shot baselines (v1: both; v1.5: GPT-4o's files are pinned).
    "bixbench/gpt-4o": _bixbench("gpt-4o", "GPT-4o (OpenAI)"),
    "bixbench/claude-3-5-sonnet": _bixbench(
        "claude-3-5-sonnet-latest", "Claude 3.5 Sonnet (Anthropic)"
    ),
    # LABBench2's paper's runs of today's frontier, each bare and with tools.
    "labbench2/gpt-5-2": _labbench2("gpt-5-2", "GPT-5.2 (OpenAI)"),
    "labbench2/claude-opus-4-5": _labbench2("claude-opus-4-5", "Claude Opus 4.5 (Anthropic)"),
    "labbench2/gemini-3-pro-preview": _labbench2(
        "gemini-3-pro-preview", "Gemini 3 Pro preview (Google)"
    ),
}


class SourceError(ValueError):
    """A source that cannot be read as configured; the message names it."""


def resolve_source(source: str | dict, where: str) -> dict:
    """A source spec: a known source by name, or an inline one (checked)."""
    if isinstance(source, str):
        try:
            return {"name": source, **SOURCES[source]}
        except KeyError:
            raise SourceError(
                f"{where}: unknown source {source!r}; known: {', '.join(SOURCES)} "
                "(or describe it inline: repo, commit, format, files, model)"
            ) from None
    spec = dict(source)
    if spec.get("format") not in FORMATS:
        raise SourceError(f"{where}.format: {spec.get('format')!r}; one of {', '.join(FORMATS)}")
    if spec["format"] == "labbench2" and "reports" not in spec:
        pinned = ", ".join(s for s in SOURCES if s.startswith("labbench2/"))
        raise SourceError(f"{where}: a labbench2 source is {pinned} or your own `reports`")
    if "reports" in spec:  # a user's own run (LABBench2's reports, BixBench's CSVs), local
        return _local_reports(spec, where)
    for benchmark, pattern in spec.get("files", {}).items():
        if spec["format"] == "genegpt" and "{task}" not in str(pattern):
            raise SourceError(f"{where}.files.{benchmark}: a genegpt-format path needs {{task}}")
    spec.setdefault("name", f"{spec['repo']}@{spec['commit'][:7]}")
    return spec


def _local_reports(spec: dict, where: str) -> dict:
    """A user's own run's files (LABBench2's reports, BixBench's graded CSVs): task ->
    existing files, each read as it is (its sha256 stated in the run's identity)."""
    from ..benchmarks.bixbench import TASKS
    from ..benchmarks.labbench2 import report_files

    reports = spec["reports"]
    if spec["format"] not in LOCAL_FORMATS:
        raise SourceError(f"{where}: files by path are read as {' or '.join(LOCAL_FORMATS)}")
    if not isinstance(reports, dict) or not reports:
        raise SourceError(f"{where}.reports: a map of task -> its file (or files)")
    known = report_files() if spec["format"] == "labbench2" else TASKS
    for task, paths in reports.items():
        if task not in known:
            raise SourceError(f"{where}.reports: {task!r} is no task; one of {', '.join(known)}")
        for path in [paths] if isinstance(paths, str) else paths:
            if not Path(path).expanduser().is_file():
                raise SourceError(f"{where}.reports.{task}: no file {path}")
    spec.setdefault("name", f"local {spec['format']} files ({spec.get('model', 'a system')})")
    spec.setdefault("repo", "local")
    spec.setdefault("commit", "local")
    files = sum(1 if isinstance(p, str) else len(p) for p in reports.values())
    spec.setdefault("prompt", f"{LOCAL_HARNESS[spec['format']]} (your own run)")
    spec.setdefault("cite", f"{files} file{'s' * (files != 1)} given by path")
    return spec


# Whose harness a user's own files of each format come from.
LOCAL_HARNESS = {"labbench2": "LABBench2's harness", "bixbench": "BixBench's grade_outputs.py"}


def pinned_file(source: dict, path: str) -> UpstreamFile | None:
    """``path`` of the source's repository at its commit, with its pinned sha256: from
    the manifest, else from the source's ``sha256`` map; None if neither pins it."""
    probe = UpstreamFile(source["repo"], source["commit"], path, None, UNKNOWN)
    if probe.relpath in manifest():
        return manifest()[probe.relpath]
    digest = source.get("sha256", {}).get(path)
    if digest is None:
        return None
    return UpstreamFile(source["repo"], source["commit"], path, None, digest)


def task_file(source: dict, benchmark: str, task: str) -> UpstreamFile | None:
    """The file holding ``task``'s answers (None: the source has no such file)."""
    pattern = source.get("files", {}).get(benchmark)
    if isinstance(pattern, dict):  # {task: path}
        pattern = pattern.get(task)
    if pattern is None:
        return None
    if "{task}" not in pattern:
        return pinned_file(source, pattern)
    for spelling in (task, *SPELLINGS.get(task, ())):
        file = pinned_file(source, pattern.replace("{task}", spelling))
        if file is not None:
            return file
    return None


def claimed_files(source: dict) -> dict[str, UpstreamFile]:
    """Benchmark -> the pinned file stating the source's own score, where it has one."""
    files = {}
    for benchmark, claim in source.get("claimed", {}).items():
        if "file" in claim:
            file = pinned_file(source, claim["file"])
            if file is not None:
                files[benchmark] = file
    return files


def rank_files(source: dict) -> dict[str, UpstreamFile]:
    """Task -> the pinned file of the source's own similarity ranks (Hu et al.'s)."""
    files = {}
    for task, path in source.get("ranks", {}).items():
        file = pinned_file(source, path)
        if file is not None:
            files[task] = file
    return files


def canonical_task(name: str) -> str:
    return _CANONICAL.get(name, name)


@dataclass(frozen=True)
class ImportedItem:
    question: str
    answer: str | None  # the system's final text
    steps: list[tuple[str, str]] = field(default_factory=list)  # genegpt: [prompt, completion]
    thoughts: str | None = None  # task_dict: the system's account of what it did
    confidence: float | None = None  # hu: the model's own confidence in its name


def _as_text(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def load_items(
    path: Path, fmt: str, task: str, sha256: str | None = None, questions: list[str] = ()
) -> tuple[dict[str, ImportedItem], int]:
    """``task``'s items of an imported file, by question text, and how many duplicate
    questions it held (the first answer is kept); ``sha256``: the file's pin, where the
    config gives it (checked again as the file is read); ``questions``: the task's
    question texts in dataset order (``geneagent``: what its blocks are paired with)."""
    if fmt == "geneagent":
        return _geneagent_items(read_text(path, sha256), questions), 0
    if fmt == "hu":
        return _hu_items(read_text(path, sha256), task)
    data = read_json(path, sha256)
    items: dict[str, ImportedItem] = {}
    duplicates = 0
    if fmt == "genegpt":
        rows = [
            ImportedItem(q, _as_text(final), [tuple(s) for s in steps])
            for q, _gold, final, steps in data
        ]
    elif fmt == "task_dict":
        of_task = next((v for k, v in data.items() if canonical_task(k) == task), {})
        rows = [
            ImportedItem(q, _as_text(v.get("prediction")), thoughts=_as_text(v.get("thoughts")))
            for q, v in of_task.items()
        ]
    else:
        raise SourceError(f"unknown import format {fmt!r}; one of {', '.join(FORMATS)}")
    for item in rows:
        if item.question in items:
            duplicates += 1
        else:
            items[item.question] = item
    return items, duplicates


def _geneagent_items(text: str, questions: list[str]) -> dict[str, ImportedItem]:
    """A GeneAgent output file's blocks paired with the sets (a set's question text is
    its genes); a block paired with none is kept under a key that is no question, so
    that it counts as ``unmatched``."""
    blocks = read_blocks(text)
    paired = align(blocks, [q.split() for q in questions])
    items = {
        q: ImportedItem(q, blocks[j].name, thoughts=blocks[j].text)
        for q, j in zip(questions, paired, strict=True)
        if j is not None
    }
    for j in sorted(set(range(len(blocks))) - {j for j in paired if j is not None}):
        items[f"(block {j + 1}: answers no set of the dataset)"] = ImportedItem(
            "", blocks[j].name, thoughts=blocks[j].text
        )
    return items


def _hu_items(text: str, task: str) -> tuple[dict[str, ImportedItem], int]:
    """A Hu et al. file's answers for ``task`` (its contamination level), by the set's
    genes at that level (our question text)."""
    if task not in HU_LEVELS:
        raise SourceError(f"a hu-format file answers Hu et al.'s tasks only, not {task!r}")
    genes_column = HU_LEVELS[task]
    level = genes_column.removesuffix("_Genes") if genes_column != "Genes" else "default"
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    names = [c for c in (rows[0] if rows else {}) if c.endswith(f"_{level} Name")]
    if len(names) != 1:
        raise SourceError(f"a hu-format file needs one '<model>_{level} Name' column: {names}")
    prefix = names[0].removesuffix(" Name")
    items, duplicates = {}, 0
    for row in rows:
        genes = " ".join(row[genes_column].split())
        if genes in items:
            duplicates += 1
            continue
        score = (row.get(f"{prefix} Score") or "").strip()
        items[genes] = ImportedItem(
            genes,
            row[f"{prefix} Name"].strip() or None,
            thoughts=row.get(f"{prefix} Analysis"),
            confidence=float(score) if score else None,
        )
    return items, duplicates


def coverage(items: dict[str, ImportedItem], questions: list[str], duplicates: int) -> dict:
    """How the source's items match our questions of one task: ``matched``, ``missing``
    (ours it does not answer), ``unmatched`` (its questions that are not ours)."""
    ours = set(questions)
    return {
        "questions": len(ours),
        "source_items": len(items) + duplicates,
        "matched": sum(q in items for q in ours),
        "missing": sum(q not in items for q in ours),
        "unmatched": sum(q not in ours for q in items),
        "duplicates": duplicates,
    }


def claimed_score(source: dict, benchmark: str, path: Path | None) -> dict | None:
    """The source's own score for ``benchmark``: read from its pinned file (``key`` a
    dotted path into the JSON) or stated in the config (``score``)."""
    claim = source.get("claimed", {}).get(benchmark)
    if not claim:
        return None
    if "score" in claim:
        return {"score": float(claim["score"]), "where": claim.get("where", "stated in config")}
    if path is None:
        return None
    value = read_json(path)
    for key in claim["key"].split("."):
        value = value[key]
    return {"score": float(value), "where": f"{claim['file']} ({claim['key']})"}
