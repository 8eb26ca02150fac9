"""Build BRAD's default corpus index and measure it and its retrieval.

Run on demand:  HELIXBENCH_MIRROR=../shared/mirror python perf/index_build.py
Prints the build (documents, chunks, seconds, bytes on disk), a search's latency, and
retrieval recall on GeneAgent's 56 MSigDB gene sets (the share of a set's genes whose
summary is among the retrieved chunks) for MMR and similarity at k = 3 and k = 10.
Reads upstream files from the mirror; builds in a temporary directory.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from helixbench.benchmarks import load_all
from helixbench.retrieval import Index, build_index, index_key, index_settings


def main() -> None:
    mirror = Path(os.environ["HELIXBENCH_MIRROR"])

    def local(file) -> Path:
        return mirror / file.relpath

    settings = index_settings({})
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / index_key(settings, local)
        facts = build_index(settings, local, out)
        print(
            f"index {facts['key']}: {facts['documents']} documents, {facts['chunks']} chunks, "
            f"{facts['build_s']:.1f} s, {facts['bytes'] / 1e6:.1f} MB"
        )
        index = Index(out)
        index.search("warm up")
        started = time.perf_counter()
        for _ in range(20):
            index.search("official gene symbol of LMP10")
        print(f"search (mmr, k=3): {(time.perf_counter() - started) / 20 * 1000:.1f} ms")
        sets = [q for q in load_all(local) if q.task == "MSigDB"]
        for search, k in (("mmr", 3), ("similarity", 3), ("mmr", 10), ("similarity", 10)):
            recalls = []
            for q in sets:
                genes = set(q.text.split())
                found = {chunk.gene for chunk in index.search(q.text, search, k)}
                recalls.append(len(genes & found) / len(genes))
            hit = sum(r > 0 for r in recalls)
            print(
                f"MSigDB ({len(sets)} sets) {search} k={k}: recall "
                f"{statistics.mean(recalls):.4f}, sets with a gene retrieved {hit}"
            )


if __name__ == "__main__":
    main()
