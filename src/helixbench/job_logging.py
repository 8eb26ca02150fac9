"""How a helixbench process logs: the command line's and a rule script's alike.

Lines at INFO with their time; the libraries that say a line per HTTP request or draw a
progress bar per batch at INFO (sentence-transformers draws one an encode where its
logger is at INFO) keep their warnings only, and draw no bars; and no key from the
environment reaches a line (:mod:`.secrets`).
"""

from __future__ import annotations

import logging
import os

# Library loggers that say one line per HTTP request or per batch at INFO: a job's
# log keeps their warnings only.
QUIET_LOGGERS = (
    *("httpx", "httpcore", "httpx2", "httpcore2", "urllib3", "openai"),
    *("chromadb", "sentence_transformers", "transformers", "huggingface_hub"),
)
FORMAT = "%(asctime)s %(levelname)s %(message)s"


def configure(filename: str | None = None) -> None:
    """Log at INFO to ``filename`` (a rule's log) or standard error, quietly for
    :data:`QUIET_LOGGERS`, every handler redacting the environment's keys."""
    from . import secrets

    # (read when huggingface_hub is imported, which transformers' bars follow: "Loading
    # weights" a model load)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    logging.basicConfig(filename=filename, level=logging.INFO, format=FORMAT)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # Keys from the environment never reach a log line (backends register theirs too).
    secrets.register_env()
    for handler in logging.getLogger().handlers:
        handler.addFilter(secrets.RedactingFilter())
