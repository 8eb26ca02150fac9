"""The GeneGPT method: prompt header for any of the 64 masks, and the tool-calling loop.

Everything here follows the upstream code as reference.md section 2 describes it,
byte for byte: replayed Codex runs only hit when the prompts we build are the
prompts upstream sent. Model and tools sit behind small interfaces
(:mod:`helixbench.models`, :mod:`helixbench.tools`), so caching, rate limits and
retries live there and this loop stays the algorithm.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..datasets.snapshots import Snapshot, SnapshotError, SnapshotReply, extract_from_header
from ..digests import sha256_bytes, sha256_text
from ..genegpt_format import check_mask, check_url_rule, extract_url, is_blast_put, render_reply
from ..models import (
    CompletionRequest,
    ContextLengthError,
    Model,
    ModelError,
    ModelMiss,
    create_model,
    prompt_digest,
)
from ..sources.recordings import load_recording, recorded_header
from ..tools import Toolbox, ToolRequest, create_toolbox, tool_settings
from ..transcripts import Event, QuestionResult
from . import Prepared, model_event

INSTRUCTION = "Hello. Your task is to use NCBI Web APIs to answer genomic questions.\n"

# Dc.1 and Dc.2, upstream typos included ("efectch", "specices").
DOCUMENTATION = (
    'You can call Eutils by: "[https://eutils.ncbi.nlm.nih.gov/entrez/eutils/'
    '{esearch|efetch|esummary}.fcgi?db={gene|snp|omim}&retmax={}&{term|id}={term|id}]".\n'
    "esearch: input is a search term and output is database id(s).\n"
    "efectch/esummary: input is database id(s) and output is full records or summaries "
    "that contain name, chromosome location, and other information.\n"
    "Normally, you need to first call esearch to get the database id(s) of the search term, "
    "and then call efectch/esummary to get the information with the database id(s).\n"
    "Database: gene is for genes, snp is for SNPs, and omim is for genetic diseases.\n\n",
    'For DNA sequences, you can use BLAST by: "[https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi?'
    "CMD={Put|Get}&PROGRAM=blastn&MEGABLAST=on&DATABASE=nt&FORMAT_TYPE={XML|Text}"
    '&QUERY={sequence}&HITLIST_SIZE={max_hit_size}]".\n'
    "BLAST maps a specific DNA {sequence} to its chromosome location among different specices.\n"
    "You need to first PUT the BLAST request and then GET the results using the RID returned "
    "by PUT.\n\n",
)

EUTILS = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
BLAST = "https://blast.ncbi.nlm.nih.gov/blast/Blast.cgi"
DEMO4_SEQUENCE = (
    "ATTCTGCCTTTAGTAATTTGATGACAGAGACTTCTTGGGAACCACAGCCAGGGAGCCACCCTTTACTCCACCAACAGGTGG"
    "CTTATATCCAATCTGAGAAAGAAAGAAAAAAAAAAAAGTATTTCTCT"
)
BLAST_GET_TEMPLATE = f"{BLAST}?CMD=Get&FORMAT_TYPE=Text&RID={{rid}}"


@dataclass(frozen=True)
class Demonstration:
    label: str
    question: str
    urls: tuple[str, ...]  # BLAST_GET_TEMPLATE is filled with the RID of the Put before it
    answer: str


DEMONSTRATIONS = (
    Demonstration(
        "Dm.1",
        "What is the official gene symbol of LMP10?",
        (
            f"{EUTILS}esearch.fcgi?db=gene&retmax=5&retmode=json&sort=relevance&term=LMP10",
            f"{EUTILS}efetch.fcgi?db=gene&retmax=5&retmode=json&id=19171,5699,8138",
        ),
        "PSMB10",
    ),
    Demonstration(
        "Dm.2",
        "Which gene is SNP rs1217074595 associated with?",
        (f"{EUTILS}esummary.fcgi?db=snp&retmax=10&retmode=json&id=1217074595",),
        "LINC01270",
    ),
    Demonstration(
        "Dm.3",
        "What are genes related to Meesmann corneal dystrophy?",
        (
            f"{EUTILS}esearch.fcgi?db=omim&retmax=20&retmode=json&sort=relevance"
            "&term=Meesmann+corneal+dystrophy",
            f"{EUTILS}esummary.fcgi?db=omim&retmax=20&retmode=json"
            "&id=618767,601687,300778,148043,122100",
        ),
        "KRT12, KRT3",
    ),
    Demonstration(
        "Dm.4",
        f"Align the DNA sequence to the human genome:{DEMO4_SEQUENCE}",
        (
            f"{BLAST}?CMD=Put&PROGRAM=blastn&MEGABLAST=on&DATABASE=nt&FORMAT_TYPE=XML"
            f"&QUERY={DEMO4_SEQUENCE}&HITLIST_SIZE=5",
            BLAST_GET_TEMPLATE,
        ),
        "chr15:91950805-91950932",
    ),
)

PRESETS = {"genegpt-slim": "001001", "genegpt-full": "111111"}
STOP = ("->", "\n\nQuestion")


def demonstration_urls(demo: Demonstration, snapshot: Snapshot) -> list[str]:
    """The demo's URLs, the BLAST Get one filled with the RID the snapshot's Put returned."""
    urls, rid = [], None
    for url in demo.urls:
        if url == BLAST_GET_TEMPLATE:
            url = url.format(rid=rid)
        urls.append(url)
        if is_blast_put(url):
            rid = render_reply(url, snapshot.reply(url).value(), cap=None)
    return urls


def build_header(mask: str, snapshot: Snapshot) -> str:
    """The prompt header for ``mask``, with the demonstrations' replies from ``snapshot``."""
    check_mask(mask)
    header = INSTRUCTION
    for bit, doc in zip(mask[:2], DOCUMENTATION, strict=True):
        if bit == "1":
            header += doc
    demos = [d for bit, d in zip(mask[2:], DEMONSTRATIONS, strict=True) if bit == "1"]
    if demos:
        header += "Here are some examples:\n\n"
    for demo in demos:
        header += f"Question: {demo.question}\n"
        for url in demonstration_urls(demo, snapshot):
            # Demo replies are interpolated whole: upstream caps only replies in the loop.
            header += f"[{url}]->[{render_reply(url, snapshot.reply(url).value(), cap=None)}]\n"
        header += f"Answer: {demo.answer}\n\n"
    return header


def recorded_snapshot(header: str, mask: str, source: dict) -> Snapshot:
    """The demonstration snapshot a recorded run's header embeds, checked strictly: the
    header we build from it for ``mask`` is the recorded header, byte for byte."""
    snapshot = extract_from_header(header, source)
    if build_header(mask, snapshot) != header:
        raise SnapshotError(
            f"the header rebuilt for mask {mask} differs from {source.get('url')}'s recorded one"
        )
    return snapshot


def snapshot_of_recording(path: Path, name: str, url: str, mask: str) -> Snapshot:
    """The demonstration snapshot of the recorded run in file ``path`` (recording
    ``name``, from ``url``), checked against its header for ``mask``."""
    header = recorded_header(load_recording(Path(path)))
    return recorded_snapshot(header, mask, {"kind": "recorded", "recording": name, "url": url})


def take_live_snapshot(name: str, mode: str) -> Snapshot:
    """A snapshot of the demonstrations taken now through the tool executor, in ``mode``."""
    from ..store import utc_now
    from ..tools.executor import ToolExecutor, ToolSettings

    settings = ToolSettings.from_config(tool_settings(mode))
    source = {"kind": "live", "name": name, "taken_at": utc_now(), "tools_mode": settings.mode}
    return take_snapshot(ToolExecutor(settings), source)


def take_snapshot(tools: Toolbox, source: dict) -> Snapshot:
    """A snapshot of the seven demonstration replies, fetched through ``tools`` now.

    The BLAST Get asks for the RID the Put just returned, so the pair is one live
    search. Any failed call fails the snapshot: a header with an error in a
    demonstration would teach the model the error.
    """
    replies: dict[str, SnapshotReply] = {}
    for demo in DEMONSTRATIONS:
        rid = None
        for url in demo.urls:
            if url == BLAST_GET_TEMPLATE:
                url = url.format(rid=rid)
            reply = tools.call(ToolRequest(url, f"snapshot.{demo.label}", len(replies)))
            if reply.error is not None:
                raise SnapshotError(f"{demo.label} {url}: {reply.error}")
            replies[url] = SnapshotReply(url, body=reply.body, rid=reply.text)
            if is_blast_put(url):
                rid = render_reply(url, reply.value(), cap=None)
                if rid.startswith("Error"):
                    raise SnapshotError(f"{demo.label} {url}: {rid}")
    digests = {url: sha256_bytes(r.body or r.rid.encode()) for url, r in replies.items()}
    return Snapshot(replies, {**source, "sha256": digests})


@dataclass(frozen=True)
class GeneGPT:
    """The GeneGPT tool-calling loop. The defaults are upstream's final loop; each
    setting may be overridden per method, and a replayed recording brings the
    variant it was recorded with (:func:`helixbench.sources.recordings.infer_loop`)."""

    header: str
    cut_length: int = 18_000
    max_calls: int = 10
    reply_cap: int = 10_000
    max_tokens: int = 512
    temperature: float = 0.0
    url_rule: str = "first"  # which completions call a URL (helixbench.genegpt_format)

    # The method settings that shape the loop (config keys of a genegpt method).
    SETTINGS = ("cut_length", "max_calls", "reply_cap", "max_tokens", "url_rule")

    @classmethod
    def from_spec(cls, spec: dict, snapshot: Snapshot, recorded: dict | None = None) -> GeneGPT:
        """The loop ``spec`` configures; ``recorded``: the settings a replayed recording
        was made with, used where ``spec`` sets none."""
        settings = {**(recorded or {}), **{k: spec[k] for k in cls.SETTINGS if k in spec}}
        check_url_rule(settings.get("url_rule", "first"))
        return cls(build_header(spec["mask"], snapshot), **settings)

    def settings(self) -> dict:
        """The loop's settings, as run records state them."""
        return {name: getattr(self, name) for name in self.SETTINGS}

    def run(self, question_id: str, question: str, model: Model, tools: Toolbox) -> QuestionResult:
        prompt = self.header + f"Question: {question}\n"
        result = QuestionResult(question_id=question_id, header_sha256=sha256_text(self.header))
        sent = self.header  # what the log already holds, so each call logs its increment only
        for call_index in range(self.max_calls):
            if len(prompt) > self.cut_length:
                prompt = prompt[-self.cut_length :]
            request = CompletionRequest(
                prompt=prompt,
                stop=STOP,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                question_id=question_id,
                question=question,
                call_index=call_index,
                shared_prefix=self.header,
            )
            started = time.perf_counter()
            try:
                completion = model.complete(request)
            except ContextLengthError as exc:
                result.events.append(_model_event(request, sent, None, started, error=exc))
                return result.finish(answer="lengthError", error="lengthError")
            except ModelMiss as exc:
                result.events.append(_model_event(request, sent, None, started, error=exc))
                return result.finish(answer=None, error="model_miss")
            except ModelError as exc:
                result.events.append(_model_event(request, sent, None, started, error=exc))
                return result.finish(answer=None, error="model_error")
            result.events.append(_model_event(request, sent, completion, started))
            sent = prompt
            url = extract_url(completion.text, self.url_rule)
            if url is None:
                return result.finish(answer=completion.text)
            started = time.perf_counter()
            reply = tools.call(
                ToolRequest(url, question_id, call_index, needed_bytes=self.reply_cap)
            )
            rendered = render_reply(url, reply.value(), self.reply_cap)
            result.events.append(
                Event("tool", call_index, reply.describe(rendered), time.perf_counter() - started)
            )
            prompt += f"{completion.text}->[{rendered}]\n"
        return result.finish(answer="numError", error="numError")


def _model_event(request, previous_prompt, completion, started, error=None) -> Event:
    prompt = request.prompt
    # Log what this call added to the prompt (the header is logged once, by its
    # hash); the whole prompt when front truncation broke the continuity.
    if prompt.startswith(previous_prompt):
        increment, continued = prompt[len(previous_prompt) :], True
    else:
        increment, continued = prompt, False
    said = {
        "prompt_sha256": prompt_digest(request),
        "prompt_chars": len(prompt),
        "prompt_increment": increment,
        "continues_previous": continued,
    }
    return model_event(request, said, completion, started, error)


def prepare(context) -> Prepared:
    """A GeneGPT task: its header (from the snapshot the plan names, or read off the
    recording), the loop its recording was made with (replay), and its tools."""
    task, run = context.task, context.run
    recorded, recorded_loop, model = [], None, context.model
    if task.get("recording"):  # a replayed run: its items, and the loop that made them
        recorded = context.recordings.items(task["recording"])
        recorded_loop = context.recordings.loop(task["recording"], task.get("recording_group"))
    if model is None:  # replay: each task answers from its own recorded file
        source = {"url": task["recording_url"], "sha256": task["recording_sha256"]}
        model = create_model(run["model_spec"], recorded=recorded, recording_source=source)
    if task.get("snapshot_from_recording"):  # the header's replies, as recorded
        source = {"kind": "recorded", "recording": run["model_spec"].get("recording")}
        source["url"] = task["recording_url"]
        snapshot = recorded_snapshot(recorded_header(recorded), run["method_spec"]["mask"], source)
    else:
        snapshot = Snapshot.load(Path(task["snapshot"]))
    method = GeneGPT.from_spec(
        run["method_spec"], snapshot, recorded_loop.settings() if recorded_loop else None
    )
    tools = create_toolbox(
        tool_settings(context.tools_mode),
        recorded,
        {q.text: q.id for q in context.questions},
        url_rule=method.url_rule,
    )
    loop = {**method.settings(), "from_recording": recorded_loop is not None}
    return Prepared(method, model, tools, snapshot.id, {"loop": loop})
