"""A document corpus, its persistent vector index, and retrieval from it (BRAD's
retrieval-augmented generation, :mod:`helixbench.methods.brad`).

- **Corpus.** The default, ``geneagent-synopses``, is GeneAgent's per-gene RefSeq
  summaries at the pinned commit (``gene_narrative_synposis_spindoctor.txt`` and
  ``gene_ontological_synposis_spindoctor.txt``): one document per distinct line
  ``SYMBOL: text`` (the files list each gene set's genes, so a gene of several sets
  comes again), its source ``<file>:<SYMBOL>``. Any other value is a directory
  of the user's own documents: ``.txt`` and ``.md`` files, and ``.pdf`` through
  ``pypdf`` where it is installed, one document per file, its source the file's path
  below the directory.
- **Chunks.** LangChain's ``RecursiveCharacterTextSplitter`` with BRAD's sizes (700
  characters, 200 overlap). (BRAD's ``CharacterTextSplitter`` splits only at blank
  lines, so a one-line synopsis would stay whole whatever its length.)
- **Index.** The chunks' embeddings (sentence-transformers; the offline default is
  the MiniLM model the embedding scorer ships with) in a persistent Chroma collection
  (embedded mode, cosine space, telemetry off) under
  ``resources/index/<key>/``, the key a digest of the corpus's contents, the
  chunking and the embedding model: built once by the workflow's ``build_index``
  rule and read by every job; another corpus, chunking or model is another index.
- **Retrieval.** ``mmr`` (BRAD's default): the ``fetch_k`` nearest chunks, from which
  ``k`` are chosen by maximal marginal relevance (``lambda_mult`` weighs relevance
  against novelty, as LangChain does); or ``similarity``: the ``k`` nearest.
  Scores are cosine similarities.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .datasets.upstream import GENEAGENT_COMMIT, GENEAGENT_REPO, lookup
from .digests import sha256_bytes, sha256_json

DEFAULT_CORPUS = "geneagent-synopses"
GENEAGENT_SYNOPSES = (
    "gene_narrative_synposis_spindoctor.txt",
    "gene_ontological_synposis_spindoctor.txt",
)
DOCUMENT_SUFFIXES = (".txt", ".md", ".pdf")
# BRAD's defaults (config.json and rag.py at the pinned commit) where it has them.
DEFAULTS = {
    "corpus": DEFAULT_CORPUS,
    "chunk_size": 700,
    "chunk_overlap": 200,
    "embedding": None,  # the embedding scorer's default model
    "search": "mmr",
    "k": 3,
    "fetch_k": 20,
    "lambda_mult": 0.5,
}
INDEX_SETTINGS = ("corpus", "chunk_size", "chunk_overlap", "embedding")
COLLECTION = "helixbench-corpus"
MARKER = "index.json"
BATCH = 2000


def corpus_files(corpus: str) -> list:
    """The default corpus's pinned upstream files (UpstreamFile), else []."""
    if corpus != DEFAULT_CORPUS:
        return []
    return [lookup(GENEAGENT_REPO, name, GENEAGENT_COMMIT) for name in GENEAGENT_SYNOPSES]


def user_documents(directory: str | Path) -> list[Path]:
    """A user corpus's documents, in path order."""
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"corpus directory {root} does not exist")
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in DOCUMENT_SUFFIXES)


def index_settings(spec: dict) -> dict:
    """What decides an index, from a method spec (BRAD's defaults filled in)."""
    settings = {k: spec.get(k, DEFAULTS[k]) for k in INDEX_SETTINGS}
    from .scoring.text import DEFAULT_EMBEDDING

    settings["embedding"] = settings["embedding"] or dict(DEFAULT_EMBEDDING)
    return settings


def corpus_digest(settings: dict, local_path) -> str:
    """The digest of the corpus's contents: its pinned checksums, or every document's
    bytes (``local_path(file)``: where an upstream file lies)."""
    corpus = settings["corpus"]
    if corpus == DEFAULT_CORPUS:
        return sha256_json([f.sha256 for f in corpus_files(corpus)])
    root = Path(corpus)
    return sha256_json(
        [[str(p.relative_to(root)), sha256_bytes(p.read_bytes())] for p in user_documents(root)]
    )


def index_key(settings: dict, local_path) -> str:
    return sha256_json([corpus_digest(settings, local_path), settings])[:16]


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    source: str
    gene: str | None = None


def documents(settings: dict, local_path) -> list[tuple[str, str, str | None]]:
    """(source, text, gene) of every document of the corpus."""
    corpus = settings["corpus"]
    if corpus == DEFAULT_CORPUS:
        # The files list each gene set's genes (sets apart by "////"): a gene of several
        # sets comes again, mostly with the same text, which is indexed once.
        out = {}
        for file in corpus_files(corpus):
            stem = Path(file.path).stem
            for line in Path(local_path(file)).read_text(encoding="utf-8").splitlines():
                gene, sep, text = line.partition(":")
                if sep and text.strip():
                    out.setdefault((stem, line.strip()), (f"{stem}:{gene.strip()}", gene.strip()))
        return [(source, text, gene) for (_, text), (source, gene) in out.items()]
    root = Path(corpus)
    return [(str(p.relative_to(root)), _read_document(p), None) for p in user_documents(root)]


def _read_document(path: Path) -> str:
    if path.suffix != ".pdf":
        return path.read_text(encoding="utf-8", errors="replace")
    from pypdf import PdfReader

    return "\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages)


def chunk_documents(docs, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    """Every document split into chunks (ids ``c<number>`` in corpus order)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    chunks = []
    for source, text, gene in docs:
        for piece in splitter.split_text(text):
            chunks.append(Chunk(f"c{len(chunks):06d}", piece, source, gene))
    return chunks


_EMBEDDERS: dict[str, object] = {}


def embedder(settings: dict, cache_dir: Path | None = None):
    """The encoder of an index, one per process (its model loads once, when a text is
    not in ``cache_dir``): a :class:`helixbench.scoring.text.EmbeddingScorer`."""
    from .scoring.text import EmbeddingScorer

    key = sha256_json([settings["embedding"], str(cache_dir)])
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = EmbeddingScorer(settings["embedding"], cache_dir=cache_dir)
    return _EMBEDDERS[key]


def _client(path: Path):
    import chromadb
    from chromadb.config import Settings

    # Telemetry off: nothing leaves this machine.
    return chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False)
    )


def build_index(settings: dict, local_path, out_dir: Path) -> dict:
    """Chunk, embed and write the corpus's Chroma index into ``out_dir`` (built aside,
    then moved in place: a killed build leaves no half index); returns its facts."""
    out_dir = Path(out_dir)
    started = time.perf_counter()
    docs = documents(settings, local_path)
    chunks = chunk_documents(docs, settings["chunk_size"], settings["chunk_overlap"])
    if not chunks:
        raise ValueError(f"corpus {settings['corpus']!r} holds no text to index")
    model = embedder(settings).model()  # the chunks in batches: none is asked twice
    building = out_dir.with_name(out_dir.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    collection = _client(building / "chroma").create_collection(
        COLLECTION, embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    for start in range(0, len(chunks), BATCH):
        batch = chunks[start : start + BATCH]
        vectors = model.encode(
            [c.text for c in batch],
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        collection.add(
            ids=[c.id for c in batch],
            documents=[c.text for c in batch],
            embeddings=vectors.tolist(),
            metadatas=[{"source": c.source, "gene": c.gene or ""} for c in batch],
        )
    facts = {
        "key": out_dir.name,
        "settings": settings,
        "corpus_sha256": corpus_digest(settings, local_path),
        "documents": len(docs),
        "chunks": len(chunks),
        "dimensions": int(vectors.shape[1]),
        "build_s": round(time.perf_counter() - started, 2),
    }
    # The index's own size (its marker, a few hundred bytes, aside).
    facts["bytes"] = sum(p.stat().st_size for p in building.rglob("*") if p.is_file())
    (building / MARKER).write_text(json.dumps(facts, indent=1) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(building, out_dir)
    return facts


@dataclass(frozen=True)
class Retrieved:
    chunk_id: str
    text: str
    source: str
    gene: str
    score: float  # cosine similarity to the query


@dataclass
class Index:
    """An index built by :func:`build_index`, opened for queries."""

    path: Path
    embeddings: Path | None = None  # where queries' vectors are kept (the jobs' cache)
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        self.path = Path(self.path)
        facts = json.loads((self.path / MARKER).read_text())
        self.settings = facts["settings"]
        self.key = facts["key"]
        self._collection = _client(self.path / "chroma").get_collection(COLLECTION)
        # Questions answered at once (a served model) search one at a time: one model
        # load, and Chroma's client used by one thread at a time.
        self._lock = threading.Lock()

    def embed(self, text: str) -> np.ndarray:
        with self._lock:
            return embedder(self.settings, self.embeddings).vectors([text])[0]

    def search(
        self, query: str, search: str = "mmr", k: int = 3, fetch_k: int = 20, lambda_mult=0.5
    ) -> list[Retrieved]:
        vector = self.embed(query)
        n = max(k, fetch_k) if search == "mmr" else k
        with self._lock:
            found = self._collection.query(
                query_embeddings=[vector.tolist()],
                n_results=n,
                include=["documents", "metadatas", "distances", "embeddings"],
            )
        ids, docs = found["ids"][0], found["documents"][0]
        metas, distances = found["metadatas"][0], found["distances"][0]
        order = list(range(min(k, len(ids))))
        if search == "mmr":
            order = mmr(vector, np.asarray(found["embeddings"][0]), k, lambda_mult)
        elif search != "similarity":
            raise ValueError(f"unknown search {search!r}; use mmr or similarity")
        return [
            Retrieved(ids[i], docs[i], metas[i]["source"], metas[i]["gene"], 1 - distances[i])
            for i in order
        ]


def mmr(query: np.ndarray, candidates: np.ndarray, k: int, lambda_mult: float) -> list[int]:
    """Maximal marginal relevance over unit vectors: each pick maximises
    ``lambda_mult * sim(query, c) - (1 - lambda_mult) * max sim(c, picked)``."""
    if len(candidates) == 0:
        return []
    relevance = candidates @ query
    picked = [int(np.argmax(relevance))]
    while len(picked) < min(k, len(candidates)):
        redundancy = (candidates @ candidates[picked].T).max(axis=1)
        score = lambda_mult * relevance - (1 - lambda_mult) * redundancy
        score[picked] = -np.inf
        picked.append(int(np.argmax(score)))
    return picked
