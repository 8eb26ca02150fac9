"""RAGAs' five metrics by the ``ragas`` library itself, run with the Python of its own
environment (workflow/envs/peers/ragas.yaml): it imports nothing of helixbench.

    python ragas_runner.py INPUT.json OUTPUT.jsonl

INPUT: ``{"llm": {"base_url", "model"}, "embeddings": {"base_url", "model"},
"samples": [{"id", "key", "user_input", "response", "retrieved_contexts",
"reference"}]}``. Each sample is evaluated on its own with its own API ``key`` (the
gateway files every judge call under its question). OUTPUT: one line per sample and
metric, ``{"id", "metric", "score"}`` (``score`` null where RAGAs gives none, and
for the metrics of the contexts where nothing was retrieved).
"""

from __future__ import annotations

import json
import math
import sys
import warnings

METRICS = (
    "faithfulness",
    "answer_relevancy",
    "context_precision",
    "context_recall",
    "answer_correctness",
)


# A judge's reply: RAGAs' longest (answer correctness's statements with reasons) fits.
MAX_TOKENS = 1024
# The metrics of the retrieved texts: none for an answer retrieved nothing for (a
# vanilla run's), which RAGAs would score 0 as if its retrieval had failed.
OF_CONTEXTS = ("faithfulness", "context_precision", "context_recall")


def metrics(with_contexts: bool) -> list:
    """RAGAs' metric objects, by name (those of the contexts only ``with_contexts``)."""
    import ragas.metrics

    names = [m for m in METRICS if with_contexts or m not in OF_CONTEXTS]
    return [getattr(ragas.metrics, name) for name in names]


def evaluate_one(sample: dict, llm_settings: dict, embedding_settings: dict) -> dict:
    """RAGAs' scores of one sample, its judge and encoder reached with its key."""
    import httpx
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper

    key = sample.get("key") or "none"
    # Clients of this sample's own: LangChain keeps one per URL, whose connections
    # belong to the event loop of the previous sample's evaluate (closed by then).
    clients = {"http_client": httpx.Client(), "http_async_client": httpx.AsyncClient()}
    chat = ChatOpenAI(
        base_url=llm_settings["base_url"],
        model=llm_settings["model"],
        api_key=key,
        temperature=0,
        max_tokens=MAX_TOKENS,
        max_retries=0,
        **clients,
    )
    # The texts as they are (no tiktoken: it would download its encodings).
    encoder = OpenAIEmbeddings(
        base_url=embedding_settings["base_url"],
        model=embedding_settings["model"],
        api_key=key,
        check_embedding_ctx_length=False,
        max_retries=0,
        **clients,
    )
    row = {
        "user_input": sample["user_input"],
        "response": sample["response"],
        "retrieved_contexts": sample["retrieved_contexts"],
        "reference": sample["reference"],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RAGAs' deprecation notes, one per metric
        result = evaluate(
            EvaluationDataset.from_list([row]),
            metrics=metrics(bool(sample["retrieved_contexts"])),
            llm=LangchainLLMWrapper(chat),
            embeddings=LangchainEmbeddingsWrapper(encoder),
            run_config=RunConfig(max_workers=1, max_retries=1, timeout=600),
            show_progress=False,
            raise_exceptions=False,
        )
    frame = result.to_pandas()
    return {m: _number(frame[m].iloc[0]) if m in frame else None for m in METRICS}


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def main(source: str, out: str) -> None:
    task = json.loads(open(source, encoding="utf-8").read())
    with open(out, "w", encoding="utf-8") as fh:
        for sample in task["samples"]:
            scores = evaluate_one(sample, task["llm"], task["embeddings"])
            for metric, score in scores.items():
                fh.write(json.dumps({"id": sample["id"], "metric": metric, "score": score}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
