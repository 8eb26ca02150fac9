"""The ``openai`` backend: the OpenAI API, or any server that speaks it (vLLM,
Ollama, llama.cpp's server), through the official ``openai`` client (v1).

``api: completions`` sends the prompt with stop strings, as upstream's Codex run;
``api: chat`` sends the whole prompt as one user message, as upstream's chat
variant. The client retries 429, 5xx and connection errors with exponential
backoff and honours ``Retry-After``; what still fails becomes a
:class:`ModelError`, and a context-length refusal a :class:`ContextLengthError`.
The API key is read from the environment variable the config names and goes
nowhere else.
"""

from __future__ import annotations

import os

from . import Completion, CompletionRequest, ContextLengthError, ModelError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# How servers word a context-length refusal (OpenAI, vLLM, llama.cpp, Ollama).
_LENGTH_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "exceeds the context",
    "too many tokens",
)


class OpenAIModel:
    def __init__(self, spec: dict):
        import openai

        self._openai = openai
        self.api = spec.get("api", "completions")
        self.model = spec["model"]
        self.base_url = spec.get("base_url") or DEFAULT_BASE_URL
        self.revision = spec.get("revision")
        key_env = spec.get("api_key_env", "OPENAI_API_KEY")
        key = os.environ.get(key_env) if key_env else None
        if not key:
            if self.base_url == DEFAULT_BASE_URL:
                raise ModelError(f"set the environment variable {key_env} to use the OpenAI API")
            key = "not-needed"  # a local server that checks no key
        self._client = openai.OpenAI(
            api_key=key,
            base_url=self.base_url,
            timeout=spec.get("timeout_s", 120.0),
            max_retries=spec.get("retries", 4),
        )

    @property
    def supports_tools(self) -> bool:
        """Chat servers take tools through the API's function calling."""
        return self.api == "chat"

    def identity(self) -> dict:
        identity = {
            "backend": "openai",
            "api": self.api,
            "model": self.model,
            "base_url": self.base_url,
        }
        if self.revision:
            identity["revision"] = self.revision
        return identity

    def complete(self, request: CompletionRequest) -> Completion:
        openai = self._openai
        args = {
            "model": self.model,
            "stop": list(request.stop),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        calls = None
        try:
            if self.api == "chat":
                messages = list(request.messages or [{"role": "user", "content": request.prompt}])
                if request.tools:
                    args["tools"] = list(request.tools)
                    args.pop("stop")
                reply = self._client.chat.completions.create(messages=messages, **args)
                choice = reply.choices[0]
                text = choice.message.content or ""
                if choice.message.tool_calls:
                    calls = tuple(
                        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                        for c in choice.message.tool_calls
                    )
            else:
                reply = self._client.completions.create(prompt=request.prompt, **args)
                choice = reply.choices[0]
                text = choice.text or ""
        except openai.APIStatusError as exc:
            message = _message(exc)
            if exc.status_code in (400, 413) and any(m in message.lower() for m in _LENGTH_MARKERS):
                raise ContextLengthError(message) from None
            raise ModelError(f"HTTP {exc.status_code}: {message}") from None
        except openai.APITimeoutError:
            raise ModelError("timeout (retries spent)") from None
        except openai.APIConnectionError as exc:
            raise ModelError(f"connection failed: {exc}") from None
        usage = reply.usage
        return Completion(
            text,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            finish_reason=choice.finish_reason,
            tool_calls=calls,
        )


def _message(exc) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    if isinstance(error, dict):
        parts = [str(error.get(k)) for k in ("code", "message") if error.get(k)]
        if parts:
            return ": ".join(parts)
    return str(exc.message if hasattr(exc, "message") else exc)
