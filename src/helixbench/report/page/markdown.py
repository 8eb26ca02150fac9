"""``report.md``: the report's tables as text."""

from __future__ import annotations

import pandas as pd

from ... import paths
from ..exports.provenance import built_from
from ..tables.bank_board import BANK_BOARD_TEXT
from ..tables.bixbench import bixbench_markdown
from ..tables.frontier import frontier_markdown
from ..tables.geneagent_paper import paper_layout
from ..tables.genesets import _genesets_markdown
from ..tables.headline import HEADLINE_METHOD, headline_sentence
from ..tables.judges import CALIBRATION_TEXT, JUDGES_TEXT, JURY_TEXT, UNCALIBRATED
from ..tables.leaderboard import encoders_of
from ..text import fmt, fmt_bracket, md_escape, md_table

# An imported source's fields that the config supplies (escaped: text, not markup).
FREE_TEXT = ("model", "prompt", "cite", "commit", "source", "evaluator", "claimed_where")


def _imported_markdown(imported: list[dict], imports: pd.DataFrame) -> str:
    if not imported:
        return "None in this config."
    lines = []
    for r in imported:
        # The source's fields come from the config: shown as text, never as markup.
        text = {k: md_escape(r[k]) for k in FREE_TEXT if r.get(k) is not None}
        claim = (
            f"the source claims {r['claimed']:.3f} ({text['claimed_where']}"
            + (f"; scored by {text['evaluator']}" if r["evaluator"] else "")
            + ")"
            if r["claimed"] is not None
            else "the pinned files state no score of the source's own"
        )
        if r.get("format") == "labbench2":  # (its own verdicts, per task, further down)
            claim = 'LABBench2\'s own verdicts: the section "LABBench2: the frontier"'
        ours = f"extracted {fmt(r['extracted'])}, upstream {fmt(r['genegpt'])}; "
        said = ", ".join(text[k] for k in ("model", "prompt") if text.get(k))
        where = (
            f"{text.get('cite', '')} ({text['source']})"
            if r["commit"] == "local"
            else f"{text.get('cite', '')} at commit {text['commit'][:12]} ({text['source']})"
        )
        lines.append(
            f"- **{r['run']}** ({r['benchmark']}): {said or 'as its source names it'}. "
            f"Source: {where}. Under our rules: "
            f"{ours if r['extracted'] is not None else ''}{claim}."
        )
    coverage_text = imports.groupby(["run", "benchmark"], sort=False)[
        ["questions", "matched", "missing", "unmatched", "duplicates"]
    ].sum()
    return (
        "\n".join(lines)
        + "\n\nQuestions matched verbatim (golds always ours; `missing`: ours the source "
        "does not answer, scored as misses; `unmatched`: the source's questions that are "
        "not ours, left out). Per task in `imports.csv`.\n\n"
        + coverage_text.reset_index().to_markdown(index=False)
    )


def _models_markdown(models: dict, cards: dict | None = None) -> str:
    """One row per model: who made it and its id as the ecosystem names it (the
    exports' model), its backend, what else identifies it, and how many identities it
    had (a replay model has one per recorded file)."""
    rows = []
    cards = cards or {}
    for name, identities in models.items():
        first = identities[0]
        digest = first.get("weights_sha256") or first.get("sha256")
        digest = digest if isinstance(digest, str) else ""
        said = {
            k: v
            for k, v in first.items()
            if k not in ("backend", "model", "file", "sha256", "weights_sha256")
        }
        rows.append(
            {
                "model": name,
                "developer": md_escape((cards.get(name) or {}).get("developer", "")),
                "model id": md_escape((cards.get(name) or {}).get("id", "")),
                "backend": first.get("backend", ""),
                "served as": md_escape(first.get("model") or ""),
                "identity": md_escape("; ".join(f"{k}: {v}" for k, v in sorted(said.items()))),
                "sha256": f"`{digest[:12]}`" if digest else "",
                "identities": len(identities),
            }
        )
    return md_table(pd.DataFrame(rows), empty="none", csv="provenance.json")


def _loop_text(tasks: pd.DataFrame) -> str:
    """A replayed run's loop variants (one per task where its files differ)."""
    variants = dict.fromkeys(zip(tasks.max_calls, tasks.url_rule, strict=True))
    return "; ".join(f"cap {cap} calls, URL rule {rule}" for cap, rule in variants)


def _geneset_board_text(board: pd.DataFrame) -> str:
    if board.empty:
        return "No gene-set run in this config."
    said = f"Embedding similarity by {encoders_of(board)}."
    if board.compared_on.nunique() > 1:
        said += (
            " Runs on different gene sets are not ranked against each other: each is ranked"
            " among the runs on the same sets (`compared on`)."
        )
    shown = pd.DataFrame(
        {
            "#": board["rank"],
            "run": board.run,
            **{
                column: [
                    f"{fmt(v)} {fmt_bracket(lo, hi)}"
                    for v, lo, hi in zip(
                        board[m], board[f"{m}_ci_low"], board[f"{m}_ci_high"], strict=True
                    )
                ]
                for m, column in (("embedding", "embedding similarity"), ("rougeL", "ROUGE-L"))
            },
            "compared on": board.compared_on,
        }
    )
    return said + "\n\n" + md_table(shown)


def _protocols_text(protocols: pd.DataFrame) -> str:
    if protocols.empty:
        return "No model ran two protocols on one benchmark in this config."
    intervals = zip(protocols.ci_low, protocols.ci_high, strict=True)
    shown = protocols.assign(
        macro=protocols.macro.map(fmt),
        ci_low=[fmt_bracket(lo, hi) for lo, hi in intervals],
    ).rename(columns={"ci_low": "interval"})
    return md_table(shown.drop(columns="ci_high"))


def _bank_text(bank: dict | None) -> str:
    """The question bank's section (GeneTuring 2025, BioRAGent, LAB-Bench), where a run
    covers it."""
    if bank is None:
        return ""
    parts = [
        f"## Question bank: {bank['names']}\n"
        "Each task scored by its primary scorer (docs/scoring.md), with its 95% "
        "interval (exact for a share of right answers); `macro` is the mean of the task "
        "means; `all` (LAB-Bench, "
        "and `pooled` in the leaderboard) the mean over every question, as its peers "
        "report it. In the leaderboard, "
        "`shared` covers the items that repeat a GeneTuring (2023) or GeneHop question, "
        "`new` the rest, and `original` is the same run's macro on those repeated items' "
        "counterparts, where it ran them.\n\n" + _table(bank["leaderboard"])
    ]
    for benchmark in bank["benchmarks"]:
        parts.append(
            f"### {benchmark['name']}\n{benchmark['citation']}.\n\n" + _table(benchmark["layout"])
        )
    parts.append(
        "### Overlap with GeneTuring (2023) and GeneHop\n"
        "Verbatim: the same text once whitespace is collapsed (asked once when a run covers "
        "both); instruction dropped: a GeneHop question without its closing instruction "
        "(asked once too); rephrased: the same entity in the task of the same name "
        "(helixbench.datasets.overlap). Each item keeps its own gold.\n\n" + _table(bank["overlap"])
    )
    parts.append(
        "Items whose gold differs from their counterpart's (`same_items`: the same items, "
        "written differently):\n\n" + _table(bank["golds"])
    )
    return "\n\n".join(parts) + "\n\n"


def _table(frame: pd.DataFrame) -> str:
    return md_table(frame) if not frame.empty else "none"


def _leaderboard_text(board: pd.DataFrame) -> str:
    intervals = zip(board.ci_low, board.ci_high, strict=True)
    shown = board.assign(
        run=[r + " ‡" * part for r, part in zip(board.run, board.partial, strict=True)],
        interval=[fmt_bracket(lo, hi) for lo, hi in intervals],
        tasks=[f"{t} of {n}" for t, n in zip(board.tasks, board.benchmark_tasks, strict=True)],
    )[["rank", "run", "benchmark", "imported", "extracted", "interval", "genegpt", "strict",
       "badly_formatted", "answers", "tasks"]]  # fmt: skip
    note = (
        "\n\n‡ covers fewer of the benchmark's questions or tasks than the best-covered "
        "run (a sample, or a macro of fewer tasks), so it is listed after the ranked runs, "
        "unranked."
        if board.partial.any()
        else ""
    )
    return md_table(shown) + note


def _headline_text(headline: pd.DataFrame) -> str | None:
    if headline.empty:
        return None
    lines = []
    for benchmark, rows in headline.groupby("benchmark", sort=False):
        lines.append(f"**{benchmark}**")
        lines += [f"- {headline_sentence(r, fmt)}" for r in rows.to_dict("records")]
    return (
        "Per benchmark, the pairs a reader compares first: the best run against the next "
        "(of the runs on the whole comparison set), each model against its own baseline "
        "without tools, and each run of this config's models against the best published "
        "run on the questions both answered. "
        + HEADLINE_METHOD
        + " (`headline.csv`).\n\n"
        + "\n".join(lines)
    )


def _markdown(notes: list[dict], prov: dict, tables: dict) -> str:
    """report.md: the report's tables as text (``tables`` holds them by name); a
    section with nothing to show for this config is left out."""
    replay, board = tables["replay"], tables["board"]
    shown = tables["comparisons"]
    table4 = tables["table4"]
    notes_text = "\n".join(
        f"- **{n['level']}** ({n['model']} / {n['method']}, {n['benchmark']}): "
        + md_escape(n["message"])
        for n in notes
    )
    sections = [
        ("Who wins, by how much", _headline_text(tables["headline"])),
        (
            f"Leaderboard: {tables['bank']['names']}" if tables["bank"] else None,
            BANK_BOARD_TEXT
            + ".\n\n"
            + md_table(tables["bank_board"], csv="question_bank_leaderboard.csv")
            if tables["bank"]
            else None,
        ),
        ("How to read this report", HOW_TO_READ),
        ("Notes and warnings", notes_text or None),
        (
            "Leaderboard: question answering",
            None if board.empty else LEADERBOARD_TEXT + _leaderboard_text(board),
        ),
        (
            "Leaderboard: gene sets",
            None
            if tables["geneset_board"].empty
            else GENESET_BOARD_TEXT + _geneset_board_text(tables["geneset_board"]),
        ),
        (
            "Imported runs",
            _imported_markdown(tables["imported"], tables["imports"])
            if tables["imported"]
            else None,
        ),
        (
            "GeneTuring (Table 2)",
            None
            if tables["t2"].empty
            else "Each score with its 95% bootstrap interval in brackets.\n\n"
            + md_table(tables["t2"], csv="table2.csv")
            + "\n\n### GeneTuring without the demonstration items\n"
            + md_table(tables["t2_nodemo"]),
        ),
        ("GeneHop (Table 3)", None if tables["hop"].empty else md_table(tables["hop"])),
        (
            "Gene sets (GeneAgent)",
            None if tables["genesets"].empty else _genesets_markdown(tables["genesets"]),
        ),
        (
            "GeneAgent's paper, from its own generations",
            None
            if tables["geneagent_paper"].empty
            else GENEAGENT_PAPER_TEXT + md_table(paper_layout(tables["geneagent_paper"])),
        ),
        (
            "RAGAs: BRAD's measures of retrieval",
            None
            if tables["ragas"].empty
            else RAGAS_TEXT + md_table(tables["ragas"], csv="ragas.csv"),
        ),
        (
            "Hu et al.'s gene sets: robustness to contamination",
            None
            if tables["robustness"].empty
            else ROBUSTNESS_TEXT
            + md_table(tables["robustness"], csv="robustness.csv")
            + ("\n\n" + RANKS_TEXT + md_table(tables["hu_ranks"], csv="hu_ranks.csv"))
            * (not tables["hu_ranks"].empty),
        ),
        ("Replay fidelity", None if replay.empty else _replay_text(replay)),
        (
            "Paired tests between runs",
            None
            if shown.empty
            else PAIRED_TEXT.format(shown=len(shown), formula=tables["comparison_formula"])
            + md_table(shown, csv=paths.table_file("comparisons")),
        ),
        (
            "Protocols: one model, several ways of answering",
            None
            if tables["protocols"].empty
            else PROTOCOLS_TEXT
            + _protocols_text(tables["protocols"])
            + PROTOCOL_TESTS_TEXT.format(tests=len(tables["protocol_tests"]))
            + md_table(tables["protocol_tests"], csv="protocol_tests.csv"),
        ),
        (None, _bank_text(tables["bank"]) or None),
        ("LABBench2: the frontier", frontier_markdown(tables["frontier"])),
        ("BixBench: zero-shot", bixbench_markdown(tables["bixbench"])),
        (
            "Judges",
            None
            if tables["judges"].empty
            else JUDGES_TEXT
            + ".\n\n"
            + md_table(tables["judges"], csv="judges.csv")
            + "\n\n### Calibrated against the benchmark's own verdicts\n"
            + CALIBRATION_TEXT
            + ".\n\n"
            + md_table(tables["judge_calibration"], csv="judge_calibration.csv", empty=UNCALIBRATED)
            + "\n\n"
            + md_table(tables["judge_corrected"], csv="judge_corrected.csv", empty="")
            + _jury_markdown(tables["judge_agreement"]),
        ),
        (
            "Error types (Table 4)",
            None
            if tables["taxonomy"].empty
            else TAXONOMY_TEXT
            + md_table(tables["taxonomy"], csv=paths.table_file("taxonomy"))
            + "\n\n"
            + _agreement_text(table4),
        ),
        (
            "Errors per task",
            None
            if tables["errors"].empty
            else md_table(tables["errors"], csv=paths.table_file("errors")),
        ),
        (
            "Models",
            "What produced each model's answers (the identities in `provenance.json`, "
            "which also key the response cache), each by its developer and id as the exports "
            "name it:\n\n" + _models_markdown(prov["models"], prov.get("model_cards")),
        ),
        (
            "Time, tokens and cost per run",
            None
            if tables["costs"].empty
            else COST_TEXT + md_table(tables["costs"], csv="cost.csv"),
        ),
        (None, _agents_markdown(tables["agents"]) or None),
    ]
    head = f"""# helixbench report

{built_from(prov)}

Produced by helixbench {prov["helixbench"]["version"]} (commit {prov["helixbench"]["commit"]}),
config sha256 `{prov["config_sha256"][:16]}`, Python {prov["python"]}. Full provenance
(upstream checksums, snapshot ids, model identities, package versions) is in
`provenance.json`.
"""
    parts = [head]
    for title, body in sections:
        if body:
            parts.append(f"## {title}\n{body.strip()}\n" if title else body.strip() + "\n")
    return "\n".join(parts)


def _agreement_text(table4) -> str:
    if not table4:
        return "No replayed GeneGPT-slim run in this config."
    return (
        f"For {table4['run']}: {table4['matched']} of the paper's {table4['stated']} typed "
        f"errors ({table4['share']:.0%}) fall in the same type under our rules (type-count "
        "overlap; an upper bound on per-question agreement). Ours / paper:\n\n"
        + md_table(pd.DataFrame(table4["rows"]))
    )


def _replay_text(replay: pd.DataFrame) -> str:
    summary = replay.groupby(["model", "method"], sort=False)[["calls", "hits", "misses"]].sum()
    summary["hit rate"] = (summary.hits / summary.calls).map(lambda v: f"{v:.1%}")
    summary["loop (read off the recording)"] = [
        _loop_text(replay[(replay.model == model) & (replay.method == method)])
        for model, method in summary.index
    ]
    return (
        f"{int(replay.hits.sum())} of {int(replay.calls.sum())} model calls replayed byte for "
        "byte. Upstream's recordings come from two versions of its loop (a cap of 5 or 10 "
        "model calls; a URL called wherever it appears, `first`, or only at the end of a "
        "completion, `last`): each replay uses the variant its recording shows.\n\n"
        + md_table(summary.reset_index())
    )


HOW_TO_READ = """\
- Numbers are shown to 3 significant digits; the CSV files keep 7 decimals.
  Intervals are 95% intervals: exact (Clopper-Pearson) for a share of right answers,
  on any number of questions and never a point (0 right of 14 is [0, 0.232]); for a
  macro of shares, the same on its effective number of questions (Korn-Graubard); for
  a graded score (ROUGE, recall, similarity), a bootstrap over questions (10,000
  resamples, seed 0; a macro resamples within each task), none on fewer than 10
  questions ("too few to tell"). A difference of two runs: the paired sign-flip test
  inverted, none on fewer than 10 shared questions.
- Ranks are per benchmark, among the runs on the whole comparison set; runs with
  equal scores share a rank. A run marked ‡ covers fewer of its benchmark's questions
  or tasks than the best-covered run there: it is listed after the ranked runs,
  unranked, with what it covers.
- Scores use GeneGPT's upstream evaluator (`genegpt` metric) and the `strict` one
  beside it (GeneHop's hand-judged tasks: ROUGE, embedding similarity, alias recall),
  per question in `results/scores/`; a task's score is the mean over its questions.
- "(paper)" columns give the value the GeneGPT paper published for the same recording
  and mask. Only replayed GeneGPT runs have one.
- The four GeneGPT demonstrations are scored test items; the second GeneTuring table
  leaves them out (`genegpt_excl_demos` in `scores.csv.gz`).
- Replay hit rate: the share of model calls answered by a recorded completion for
  exactly the prompt we built. Anything below 100% means our prompts differ from
  upstream's."""
LEADERBOARD_TEXT = """\
Macro score over each benchmark's automatically scored tasks on answers extracted
from wordy final texts (`extracted`, rules in `helixbench.scoring.extract`; 95%
interval), ranked per benchmark; GeneGPT's upstream scorer (`genegpt`) and
our `strict` one beside it. `badly_formatted`: answers right once extracted but not
as given. Imported runs are published outputs of other systems, re-scored here.

"""
GENESET_BOARD_TEXT = """\
Per gene-set run, best first: the mean over its datasets of the embedding similarity
of the named process to the curated name, and of ROUGE-L, each with its 95% bootstrap
interval (sets resampled within each dataset). Per dataset: "Gene sets" below.

"""
GENEAGENT_PAPER_TEXT = """\
GPT-4 (Hu et al.'s prompt) and GeneAgent's cascade as the GeneAgent paper reports
them, scored here from the paper's own generations (its repository's `Outputs/` at
the commits that held them, each block paired with its set by the genes it names).
Ours: the mean ± its standard error (the paper's ±), over the sets; ROUGE F-measure
with stemming after GeneAgent's cleaning; `embedding` by the encoder
`geneagent_paper.csv` names (`scored_by`: MedCPT where the Hugging Face cache has it,
else a stand-in, which the paper's figures do not apply to); `in_90th_percentile`:
sets whose true name is closer to the answer than 90% of our background names (their
number beside the paper's 12,320 in the `background` column).

"""
RAGAS_TEXT = """\
RAGAs (the `ragas` library, as BRAD's paper evaluated its retrieval) per run and
benchmark: faithfulness, answer relevancy, context precision, context recall and
answer correctness, each the mean over the questions it scored, with the judge and
encoder that produced them (`scored_by`); a run without retrieval has no context
metrics. Configurations as BRAD names them: vanilla, standard RAG, RAG with
contextual compression.

"""
ROBUSTNESS_TEXT = """\
Hu et al.'s GO sets, at 0%, 50% and 100% of their genes replaced at random: per run,
the share of sets it names a process for (`named`; "System of unrelated proteins"
names none, the right reply to random genes) and its mean stated `confidence`, each
with its 95% bootstrap interval. Figure: `robustness.png`.

"""
RANKS_TEXT = """\
Hu et al.'s own ranks of each real set's true name (their `simrank` files: SapBERT,
their GO background) beside our `percentile` on the same sets, each with its
encoder and background: the mean and the sets at or above the 90th percentile.

"""
PAIRED_TEXT = """\
The comparisons a reader asks for, per benchmark: each model's methods against its
best method on the benchmark, each method's models against its best model, and each
model's runs against its own baseline (no-tools, closed-book): {formula}. Per task on
its primary metric, over the questions both runs answered: the mean difference (a - b,
a the run first in the config) and the two-sided p-value of a sign-flip permutation
test (10,000 resamples, seed 0); `p_holm`: the p-value after Holm's correction over
all {shown:,} tests (family-wise error rate), all in `comparisons.csv.gz`; any other two
runs: `helixbench compare`.

"""
PROTOCOLS_TEXT = """\
Each model that ran more than one protocol on a benchmark: GeneGPT's text protocol
(URLs in brackets inside the reply), native function calling (NCBI's web APIs as
function schemas), BRAD's retrieval from a corpus, GeneAgent's self-verification and
no tools (on gene sets: closed book), on the same questions; a seed system run
unchanged (`(original)`: GeneGPT's main.py, GeneAgent's main_cascade.py, BRAD-Agent)
beside helixbench's re-implementation of it. `macro` is the benchmark's leaderboard
metric (`metric`: extracted answers; embedding similarity for gene sets) with its 95%
interval; `errors`: questions that ended in an error (the loop's cap, an overflowing
context, a model error); tokens and seconds are per question.

"""
PROTOCOL_TESTS_TEXT = """

Paired tests between one model's protocols: the difference of macro scores (a - b)
over the questions both answered (each question weighted 1 / (tasks x the task's
questions)), the two-sided p-value of a sign-flip permutation test (10,000
resamples, seed 0) and `p_holm`, Holm's correction over these {tests} tests.

"""
TAXONOMY_TEXT = """\
Wrong answers typed automatically (E1-E4, O; rules in `helixbench.report.tables.taxonomy`); F:
right once extracted from a wordy final text, wrong only as formatted.

"""
COST_TEXT = """\
Token counts come from the model (the API's usage, or the local tokenizer); replayed
runs have none. `reused_tokens`: prompt tokens a local model served from its
key/value cache (a local model) or its prompt cache (a server) instead of
encoding them. `cache_hits`: calls answered from the response cache; `model_s` is
the time this run waited on the model, `cached_model_s` the time the cached calls
took when they were made. `s_per_*`: mean latency per model call (the model's,
cached or not), tool call and question. `cost_usd` prices the calls that reached
the model (cache misses) with the config's `prices`; empty where no price is set.

"""


def _agents_markdown(agents: pd.DataFrame) -> str:
    """The Agents section: only where the config runs an agent (``kind: agent``)."""
    if agents.empty:
        return ""
    return (
        "\n## Agents\n"
        "Programs run unchanged behind the gateways (`kind: agent`): how their questions "
        "ended, their sandbox (`isolated`: namespaces of their own; `cooperative`: none, "
        "its runs marked `[unsandboxed]` wherever their scores appear), their calls "
        "(`tool_calls`: served by the tool gateway; `model_hits`, `tool_hits`: answered "
        "from the response and tool caches; `prompts_shared`: model calls whose prompt "
        "another run of the same model sent on the same question; `refused`: requests "
        "off the allowlist, connections and datagrams to anywhere else, calls past a cap; "
        "`unresolved`: "
        "lookups of names that are not allowlisted hosts; `syscalls`: system calls the "
        "sandbox's seccomp filter refused), for a seed "
        "system run unchanged (`original`) the fixed sleeps its code asked and those "
        "slept (`sleep_scale`), the routes they used, model API paths, tool hosts "
        "and MCP functions, and each cap of `limits` with what held it on the machine "
        "that ran it (a cgroup, an rlimit, a tmpfs size) and how many questions reached "
        "it (`agent_limit: <cap>`) (`agents.csv`).\n\n" + md_table(agents) + "\n"
    )


def _jury_markdown(agreement) -> str:
    """A jury's agreement (none: one judge, nothing to say)."""
    if agreement.empty:
        return ""
    table = md_table(agreement, csv="judge_agreement.csv")
    return f"\n\n### The jury's judges against each other\n{JURY_TEXT}.\n\n{table}"
