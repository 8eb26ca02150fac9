"""Runs GeneGPT's ``main.py`` (ncbi/GeneGPT, as fetched: unchanged) on one question.

Run by the original's own Python (openai 0.27), in the agent sandbox, where
``urllib``'s NCBI calls reach the tool gateway through the public hosts' front (or,
with ``sandbox: cooperative``, through helixbench's ``sitecustomize``). What this
runner does, all of it outside main.py:

- ``config.py``, the file upstream asks its users to edit with their key, is
  written with the gateway's session token (``OPENAI_API_KEY``); openai 0.27 reads
  the gateway's URL from ``OPENAI_API_BASE`` at import.
- ``data/geneturing.json``, the file main.py reads, holds the one question (as
  ``{task: {question: ""}}``; main.py never reads the answer).
- ``time.sleep`` is scaled by ``--sleep-scale`` (1: upstream's sleeps as written);
  what was asked and what was slept are reported with the answer.
- main.py runs as ``__main__`` with ``sys.argv = ["main.py", mask]`` in a fresh
  directory; its answer is the third field of the record it writes to
  ``<mask>/<task>.json`` (``lengthError`` and ``numError`` are its own errors).
  An HTTP error reply (a 404 for a URL the model made up) raises out of main.py's
  ``call_api``, which stops the script: the question's error is then
  ``upstream_http_error``, where helixbench's loop puts the error in the prompt
  and goes on.

Usage: python genegpt_main.py ANSWER_FILE --upstream DIR --mask MASK [--sleep-scale F]
(the question as JSON on stdin: ``{"id", "question"}``).
"""

import argparse
import json
import os
import runpy
import shutil
import sys
import tempfile
import urllib.error

from runner_common import ScaledSleep, write_answer

TASK = "helixbench"
ERRORS = ("lengthError", "numError")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("answer_file")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--mask", required=True)
    parser.add_argument("--sleep-scale", type=float, default=1.0)
    args = parser.parse_args()
    question = json.loads(sys.stdin.readline())["question"]
    work = tempfile.mkdtemp(prefix="genegpt-main-")
    shutil.copy(os.path.join(args.upstream, "main.py"), work)
    with open(os.path.join(work, "config.py"), "w") as f:
        f.write("import os\nAPI_KEY = os.environ['OPENAI_API_KEY']\n")
    os.makedirs(os.path.join(work, "data"))
    with open(os.path.join(work, "data", "geneturing.json"), "w") as f:
        json.dump({TASK: {question: ""}}, f)
    sleep = ScaledSleep(args.sleep_scale)
    os.chdir(work)
    sys.path.insert(0, work)
    sys.argv = ["main.py", args.mask]
    with sleep.installed():
        try:
            runpy.run_path("main.py", run_name="__main__")
        except urllib.error.HTTPError as exc:  # call_api has no handler: main.py stops
            report = {"sleep": sleep.report(), "message": f"main.py stopped: {exc}"}
            write_answer(args.answer_file, None, "upstream_http_error", report)
            return
    with open(os.path.join(args.mask, f"{TASK}.json")) as f:
        _, _, text, prompts = json.load(f)[0]
    report = {"sleep": sleep.report(), "model_calls": len(prompts)}
    write_answer(args.answer_file, text, text if text in ERRORS else None, report)


if __name__ == "__main__":
    main()
