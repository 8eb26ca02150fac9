"""The secrets a run holds (API keys), and their removal from every text we keep.

Keys come from environment variables only. Whatever reads one (a model backend,
the tool executor) registers its value here, and every text that is stored or
shown passes through :func:`redact`: run records (so transcripts, error messages
and the report built from them), cached replies and completions, the tool
request log, and log lines (:class:`RedactingFilter`). A server that repeats a
key back (``Incorrect API key provided: sk-...``, an NCBI error echoing
``api_key``) therefore leaves no trace of it.
"""

from __future__ import annotations

import logging
import os

REDACTED = "***"
# Shorter values cannot be real keys; redacting them would mangle ordinary text.
MIN_LENGTH = 8
# Environment variables that hold keys whatever the config says.
DEFAULT_ENV = ("OPENAI_API_KEY", "NCBI_API_KEY")

_secrets: set[str] = set()


def register(value: str | None) -> None:
    """Treat ``value`` as a secret from now on (in this process)."""
    if value and len(value) >= MIN_LENGTH:
        _secrets.add(value)


def register_env(*names: str) -> None:
    """Register the values of the environment variables ``names`` (and the defaults)."""
    for name in (*DEFAULT_ENV, *names):
        register(os.environ.get(name))


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_bytes(data: bytes) -> bytes:
    for secret in _secrets:
        raw = secret.encode()
        if raw in data:
            data = data.replace(raw, REDACTED.encode())
    return data


class RedactingFilter(logging.Filter):
    """Redacts secrets from every log record that passes through a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            record.msg = redact(record.getMessage())
            record.args = None
            if record.exc_info:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
                record.exc_info = None
        return True
