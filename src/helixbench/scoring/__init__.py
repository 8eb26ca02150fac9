"""Scorers, registered by name. A scorer maps ``(task, answer, gold, question)`` to a
score in [0, 1], or None where it does not score that task.

Which scorers score a task comes from the config's ``scoring`` section:
``scoring.tasks[<task>]`` where set, else ``scoring.default``.

- ``genegpt``: GeneGPT's upstream evaluate.py (:mod:`.genegpt`).
- ``strict``: exact answers after one documented normalisation (:mod:`.strict`).
- ``alias_recall``: case-insensitive recall of the gold aliases (sequence gene alias).
- ``rouge1``, ``rouge2``, ``rougeL``: ROUGE F-measure, Porter-stemmed (:mod:`.text`).
- ``embedding``: cosine similarity of sentence embeddings (:mod:`.text`).
- ``percentile``: the background percentile of the true gene-set name among
  candidate names, by the embedding model (:mod:`.text`).
- ``judge``: a model from the registry grades 1 / 0.5 / 0 (:mod:`.judge`).
- ``extracted``: ``genegpt`` on the answer a per-task rule extracts from a wordy
  final text, never below ``genegpt`` on the text as given (:mod:`.extract`);
  ``model_extracted``: the same with a model from the registry as the extractor
  (``scoring.extractor.model``).
- ``sequence_exact``, ``sequence_identity``: a sequence answer, exactly and by global
  alignment identity (:mod:`.sequence`).
- ``list_recall``, ``list_precision``: a list answer against the gold list;
  ``names_recall``, ``names_precision``, ``names_f1``: gene and protein names found
  in a sentence, ``No gene`` handled (:mod:`.lists`).
- ``tf_label``: Activation / Repression; ``yes_no``: a yes/no label (:mod:`.labels`).
- ``accuracy``, ``precision``, ``coverage``: a multiple-choice question's, scored
  from the record (the choice picked, by its place): right, right among answered,
  answered (:mod:`.choice`).
- ``labbench2``, ``lb2_published``, ``lb2_value``, ``lb2_judge``: LABBench2's answers
  three ways: its published verdict, helixbench's deterministic one, a judge with its
  own prompts (:mod:`.labbench2`).
- ``bixbench``, ``bix_published``, ``bix_verifier``, ``bix_judge``: BixBench's open
  answers as its code grades them: its published grade, its string and range
  verifiers, its LLM grader's prompt (:mod:`.bixbench`).
- ``named``: a gene-set reply names a process (not "System of unrelated proteins");
  ``confidence``: the model's own confidence score, from the record (:mod:`.stated`).

GeneTuring 2025's and BioRAGent's tasks that ask what a GeneTuring task asks take its
rules in ``genegpt``, ``strict`` and ``extracted`` (:data:`.genegpt.SAME_RULES`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..benchmarks import DEFAULT_SCORERS, default_task_scorers
from ..paths import upstream_path, user_cache_dir
from .bixbench import BixBenchPublished, BixBenchVerifier
from .choice import CHOICE_SCORERS
from .extract import extract_answer
from .genegpt import genegpt_score
from .jury import judge_names
from .labbench2 import LabBench2Published, LabBench2Value
from .labels import tf_label, yes_no
from .lists import list_precision, list_recall, names_f1, names_precision, names_recall
from .prompt_judge import FirstVerdict
from .sequence import sequence_exact, sequence_identity
from .stated import RECORD_SCORERS, named
from .strict import alias_recall, strict_score
from .text import ROUGE_TYPES, EmbeddingScorer, PercentileScorer, rouge_scorer_for

Scorer = Callable[..., "float | None"]
LABBENCH2_SCORERS = ("labbench2", "lb2_published", "lb2_value", "lb2_judge")
BIXBENCH_SCORERS = ("bixbench", "bix_published", "bix_verifier", "bix_judge")


def _labbench2_judge():
    from ..benchmarks.labbench2 import PROMPTS
    from .labbench2 import LabBench2Judge

    return LabBench2Judge, PROMPTS


def _bixbench_judge():
    from ..benchmarks.bixbench import PROMPTS
    from .bixbench import BixBenchJudge

    return BixBenchJudge, PROMPTS


# A benchmark's own grading prompts put to scoring.judge.model: scorer -> (its judge
# class, the pinned file of its prompts).
PROMPT_JUDGES = {"lb2_judge": _labbench2_judge, "bix_judge": _bixbench_judge}


def extracted_score(task: str, answer: str | None, gold, question: str = "") -> float | None:
    """Upstream's scorer on the answer extracted from the final text, never below its
    score of the text as given (the promise in :mod:`.extract`)."""
    given = genegpt_score(task, answer, gold)
    if given is None:
        return None
    return max(given, genegpt_score(task, extract_answer(task, answer, question), gold))


class ModelExtractedScorer:
    def __init__(self, extractor):
        self.extractor = extractor

    def identity(self) -> dict:
        return self.extractor.identity()

    def __call__(self, task: str, answer: str | None, gold, question: str = "") -> float | None:
        given = genegpt_score(task, answer, gold)
        if given is None:  # a task upstream does not score
            return None
        return max(given, genegpt_score(task, self.extractor(task, answer, question), gold))


# Scorers that need no settings; ``embedding`` and ``judge`` are built from config.
PLAIN_SCORERS: dict[str, Scorer] = {
    "genegpt": genegpt_score,
    "extracted": extracted_score,
    "strict": strict_score,
    "alias_recall": alias_recall,
    **{name: rouge_scorer_for(name) for name in ROUGE_TYPES},
    "sequence_exact": sequence_exact,
    "sequence_identity": sequence_identity,
    "list_recall": list_recall,
    "list_precision": list_precision,
    "names_recall": names_recall,
    "names_precision": names_precision,
    "names_f1": names_f1,
    "tf_label": tf_label,
    "yes_no": yes_no,
    "named": named,
}
SCORER_NAMES = (
    *PLAIN_SCORERS,
    *CHOICE_SCORERS,
    *RECORD_SCORERS,
    "embedding",
    "percentile",
    "judge",
    "model_extracted",
    *LABBENCH2_SCORERS,
    *BIXBENCH_SCORERS,
)
# Scorers that describe what a system did, not how right it was (whether it named a
# process for a contaminated set, and how sure it said it was: naming a random set is
# the wrong behaviour): reported, never tested as if higher were better.
DESCRIPTIVE_SCORERS = frozenset({"named", "confidence"})
# Scorers whose score says right (1) or wrong (below 1); the others grade a free text.
CORRECTNESS_SCORERS = frozenset(
    {"genegpt", "extracted", "model_extracted", "strict", "alias_recall", "judge"}
    | {"sequence_exact", "list_recall", "list_precision", "tf_label", "yes_no"}
    | {"names_recall", "names_precision", "names_f1", "accuracy", "precision"}
    | set(LABBENCH2_SCORERS)
    | set(BIXBENCH_SCORERS)
)
# Scorers that load a model and hold no state of a run: built once for a batch of runs.
SHAREABLE = frozenset({"embedding", "percentile"})
# Scorers whose verdicts are kept by content across runs and jobs (:mod:`.kept_verdicts`):
# those that read only the task, answer, gold and question.
KEPT_BY_CONTENT = frozenset(PLAIN_SCORERS) | {"embedding"}
# Scorers that ask a model of the registry, and the scoring key naming it.
MODEL_SCORERS = {"judge": "judge", "model_extracted": "extractor"}

# The default ``scoring`` section: upstream, extracted and strict scores wherever they
# apply, and the scorers each benchmark gives its own tasks (its module in
# helixbench.benchmarks: GeneHop's two hand-judged tasks as the paper judged them,
# gene-set names as GeneAgent scores them, LAB-Bench's multiple choice ...).
DEFAULT_SCORING = {
    "default": list(DEFAULT_SCORERS),
    # The paper's encoder (GeneAgent: MedCPT's query encoder, CLS, 64 tokens) where the
    # local Hugging Face cache holds it; else the offline stand-in, and the scores say so.
    "embedding": {"model": "ncbi/MedCPT-Query-Encoder", "pooling": "cls", "max_length": 64},
    "tasks": default_task_scorers(),
}


def scorers_for(task: str, scoring: dict) -> list[str]:
    """The task's scorers; the first is its primary one (the leaderboard, the paired
    tests and the error analysis use it)."""
    return list(scoring.get("tasks", {}).get(task) or scoring.get("default", []))


class Scorers:
    """The scorers one score job uses, each built once (the embedding model and the
    judge load on first use)."""

    def __init__(
        self,
        scoring: dict,
        models: dict | None = None,
        model_cache=None,
        candidates=None,
        calibrating: set[str] | None = None,
        shared: dict | None = None,
    ):
        """``models``: the config entries (name -> spec) of the models the model-based
        scorers ask (``scoring.judge.model``, ``scoring.extractor.model``);
        ``candidates``: the default background names of ``percentile``;
        ``calibrating``: a published run's questions its benchmark's judge grades (the
        calibration sample, :mod:`.calibration`), None: every question;
        ``shared``: the scorers that load a model (the encoder, a percentile
        background's vectors), kept across the runs of a batch (the others hold a run's
        own state: a judge's calls)."""
        self.scoring = scoring
        self._calibrating = calibrating
        self._shared = {} if shared is None else shared
        self._built: dict[str, Scorer] = {}
        self._namespaces: dict[tuple, str] = {}
        self._models = models or {}
        self._model_cache = model_cache
        self._candidates = candidates or []

    def get(self, name: str) -> Scorer:
        if name not in self._built:
            if name in SHAREABLE:  # (percentile: one a background, the same list of names)
                key = (name, id(self._candidates) if name == "percentile" else None)
                if key not in self._shared:
                    self._shared[key] = self._build(name)
                self._built[name] = self._shared[key]
            else:
                self._built[name] = self._build(name)
        return self._built[name]

    def _build(self, name: str) -> Scorer:
        if name in PLAIN_SCORERS:
            return PLAIN_SCORERS[name]
        if name in CHOICE_SCORERS:
            return CHOICE_SCORERS[name]
        if name in RECORD_SCORERS:
            return RECORD_SCORERS[name]
        if name == "embedding":
            return EmbeddingScorer(
                self.scoring.get("embedding"), cache_dir=embeddings_dir(self._model_cache)
            )
        if name == "percentile":
            path = self.scoring.get("percentile", {}).get("candidates")
            candidates = self._candidates
            if path:  # a larger background: one name a line
                candidates = [n.strip() for n in open(path, encoding="utf-8") if n.strip()]
            return PercentileScorer(
                self.get("embedding"), candidates, backgrounds_dir(self._model_cache)
            )
        if name == "lb2_published":
            return LabBench2Published()
        if name == "lb2_value":
            return LabBench2Value()
        if name in PROMPT_JUDGES:  # (no judge model: no judge scores, the rest as they are)
            judge, prompts = PROMPT_JUDGES[name]()
            settings = self.scoring.get("judge") or {}
            judges = {n: self._models[n] for n in judge_names(self.scoring) if n in self._models}
            return judge(
                judges,
                Path(upstream_path(prompts)),
                self._model_cache,
                settings.get("fence", True),
                settings.get("rule", "majority"),
                self._calibrating,
            )
        if name == "labbench2":
            parts = {"published": "lb2_published", "value": "lb2_value", "judge": "lb2_judge"}
            return FirstVerdict([(name, self.get(part)) for name, part in parts.items()])
        if name == "bixbench":
            parts = {"published": "bix_published", "verifier": "bix_verifier", "judge": "bix_judge"}
            return FirstVerdict([(name, self.get(part)) for name, part in parts.items()])
        if name == "bix_published":
            return BixBenchPublished()
        if name == "bix_verifier":
            return BixBenchVerifier()
        if name == "judge":
            from .judge import JudgeScorer

            judges = {n: self._models.get(n) for n in judge_names(self.scoring)}
            if not judges or None in judges.values():
                raise ValueError("scorer 'judge' needs scoring.judge.model (models in config)")
            rule = (self.scoring.get("judge") or {}).get("rule", "majority")
            return JudgeScorer(judges, cache=self._model_cache, rule=rule)
        if name in MODEL_SCORERS:
            key = MODEL_SCORERS[name]
            model = self.scoring.get(key, {}).get("model")
            if model not in self._models:
                raise ValueError(f"scorer {name!r} needs scoring.{key}.model (a model in config)")
            from .extract import ModelExtractor

            extractor = ModelExtractor(model, self._models[model], cache=self._model_cache)
            return ModelExtractedScorer(extractor)
        raise KeyError(f"unknown scorer {name!r}; available: {', '.join(SCORER_NAMES)}")

    def for_task(self, task: str) -> list[tuple[str, Scorer]]:
        return [(name, self.get(name)) for name in scorers_for(task, self.scoring)]

    def namespace(self, names: list[str]) -> str | None:
        """Where the verdicts of ``names``' kept scorers are kept by content
        (:mod:`.kept_verdicts`); None: none of them is kept (each reads more than the
        answer)."""
        kept = tuple(n for n in names if n in KEPT_BY_CONTENT)
        if not kept:
            return None
        if kept not in self._namespaces:
            from .batch import code_digest
            from .kept_verdicts import namespace

            identities = {}
            for name in kept:
                if name == "embedding":
                    scorer = self.get(name)
                    identities[name] = scorer.identity() | scorer.versions()
                else:
                    identities[name] = None
            self._namespaces[kept] = namespace(identities, code_digest())
        return self._namespaces[kept]

    def scored_by(self, name: str) -> str | None:
        """What produced ``name``'s scores where a model did (the encoder), else None."""
        label = getattr(self.get(name), "label", None)
        return label() if callable(label) else None

    def judge_calls(self) -> dict[str, dict]:
        """Question id -> the call a scorer made of a judge and its verdict (LABBench2's
        judge), for the score job's judge-call file."""
        found = {}
        for scorer in self._built.values():
            found.update(getattr(scorer, "calls", {}))
        return found

    def identities(self) -> dict:
        """What the model-based scorers used, for the report's provenance."""
        return {n: s.identity() for n, s in self._built.items() if hasattr(s, "identity")}


def embeddings_dir(model_cache) -> Path | None:
    """Where the jobs keep texts' vectors: beside the model cache, so one cleaning of
    the caches clears both."""
    return Path(model_cache).parent / "embeddings" if model_cache else None


def backgrounds_dir(model_cache) -> Path | None:
    """Where percentile backgrounds' embeddings are kept: in the user's cache, so that
    every working directory on the machine (a sweep's, a fresh clone's, the tests')
    encodes a background once (11,143 names: over a minute of CPU); beside the texts'
    vectors where that cache cannot be written. None: nothing kept (no model cache)."""
    if not model_cache:
        return None
    shared = user_cache_dir() / "embeddings" / "backgrounds"
    try:
        shared.mkdir(parents=True, exist_ok=True)
        if os.access(shared, os.W_OK | os.X_OK):
            return shared
    except OSError:
        pass
    return embeddings_dir(model_cache)


def get_scorer(name: str) -> Scorer:
    try:
        return PLAIN_SCORERS[name]
    except KeyError:
        raise KeyError(f"unknown scorer {name!r}; available: {', '.join(SCORER_NAMES)}") from None
