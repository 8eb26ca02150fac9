"""The judges in the report (``judges.csv``): per run, task and grading scorer, which
model judged, how many calls it made, how it decided them, the undecided ones by kind
(``unsure``, ``negated``, ``contradicted``, ``unparseable``: no score, counted apart)
and whether the graded answer was fenced in its prompt."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config.plan import Plan
from ...models.card import model_card
from ...scoring.jury import judge_names
from ...scoring.verdicts import UNDECIDED
from ...stats import proportion_interval
from .frontier import POOLED_SYSTEMS as POOLED
from .frontier import _agreement, _rounded

JUDGE_COLUMNS = [
    "run", "benchmark", "task", "scorer", "judge", "calls", "correct", "incorrect",
    *UNDECIDED, "undecided_share", "fenced", "self_judging",
]  # fmt: skip
JUDGES_TEXT = (
    "Per run and task, each grading judge's calls and how it decided them (`judges.csv`): "
    "a reply is read as the judge meant it, or counted undecided (`unsure`; `negated`, "
    '"not correct"; `contradicted`, two verdicts that differ; `unparseable`, none or a '
    "refused call), never guessed; an undecided answer has no score. `fenced`: the "
    "graded answer lay in a fence it cannot close (`scoring.judge.fence`), its own "
    "copies of the prompt's markers and verdict tags neutralized"
)


def judge_table(plan: Plan, summaries: dict) -> pd.DataFrame:
    judges = [j for j in judge_names(plan.scoring or {}) if j in plan.models]
    judge_ids = {model_card(j, plan.models[j])["id"] for j in judges}
    rows = []
    for run in plan.runs:
        own = model_card(run.model, run.model_spec)["id"] in judge_ids
        for found in summaries[run.label].get("judge") or []:
            row = {"run": run.label, "judge": ", ".join(judges), **found, "self_judging": own}
            undecided = sum(row.get(k, 0) for k in UNDECIDED)
            row["undecided_share"] = round(undecided / row["calls"], 7) if row["calls"] else None
            rows.append(row)
    table = pd.DataFrame(rows, columns=JUDGE_COLUMNS)
    for column in ("correct", "incorrect", *UNDECIDED):
        table[column] = table[column].fillna(0).astype(int)
    return table


# A benchmark's published verdict and the judge's of the same answers: its calibration.
CALIBRATED = {"lb2_judge": "lb2_published", "bix_judge": "bix_published"}
CALIBRATION_COLUMNS = [
    "scorer", "benchmark", "tag", "system", "pairs", "right", "agreement", "kappa", "sensitivity",
    "sensitivity_low", "sensitivity_high", "specificity", "specificity_low",
    "specificity_high",
]  # fmt: skip
CORRECTED_COLUMNS = [
    "run", "benchmark", "scorer", "judged", "raw", "corrected", "corrected_low",
    "corrected_high", "calibrated_on",
]  # fmt: skip
CALIBRATION_TEXT = (
    "The judge against the benchmark's own verdicts: on the published answers it judged "
    "(the imported runs of this config: every system's answer to a sample of each "
    "benchmark's questions stratified by tag and type, `scoring.judge.calibration`), "
    "per benchmark and tag, pooled over the systems "
    "and per system: how often it agrees, Cohen's kappa, its sensitivity (right by the "
    "published verdict, right by the judge) and specificity (wrong and wrong), each "
    "with its exact 95% interval (`judge_calibration.csv`). Beside each run it judged, its "
    "raw judged accuracy and the accuracy corrected for those error rates (Rogan-Gladen: "
    "(raw + specificity - 1) / (sensitivity + specificity - 1), within [0, 1]), with a "
    "95% interval that carries the calibration's own uncertainty (10,000 draws, seed 0, "
    "of the raw accuracy, sensitivity and specificity from their Jeffreys posteriors; "
    "`judge_corrected.csv`). A judge with no published answers to judge is uncalibrated: "
    "its scores are shown raw and said to be"
)


def calibration_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Per judging scorer, benchmark and tag (``all``: every tag), pooled over systems
    and per system: the judge's verdicts against the published ones."""
    rows = []
    for judged, published in CALIBRATED.items():
        pairs = _pairs(scores, judged, published)
        if pairs.empty:
            continue
        for benchmark, of in pairs.groupby("benchmark", sort=False):
            tags = [("all", of), *((t, g) for t, g in of.groupby("tag", sort=True))]
            for tag, group in tags:
                for system, part in [(POOLED, group), *group.groupby("run", sort=False)]:
                    if system != POOLED and tag != "all":
                        continue  # (per system: over every tag; per tag: pooled)
                    rows.append(
                        {"scorer": judged, "benchmark": benchmark, "tag": tag, "system": system,
                         **_rates(part.published.to_numpy(), part.judged.to_numpy())}
                    )  # fmt: skip
    return _rounded(pd.DataFrame(rows, columns=CALIBRATION_COLUMNS))


UNCALIBRATED = (
    "Uncalibrated: the judge graded no published answer here (run the benchmark's "
    "published systems beside yours, `kind: imported`, to measure it); its scores are raw."
)


def _pairs(scores: pd.DataFrame, judged: str, published: str) -> pd.DataFrame:
    key = ["run", "question_id"]
    of = scores[scores.metric.isin([judged, published])]
    wide = of.pivot_table(index=[*key, "benchmark", "task"], columns="metric", values="score")
    if judged not in wide or published not in wide:
        return pd.DataFrame(columns=[*key, "benchmark", "tag", "published", "judged"])
    wide = wide.dropna(subset=[judged, published]).reset_index()
    return wide.assign(
        tag=[str(t).split("/")[0] for t in wide.task],
        published=wide[published],
        judged=wide[judged],
    )


def _rates(published: np.ndarray, judged: np.ndarray) -> dict:
    """The agreement table's share and kappa (:func:`.frontier._agreement`), the
    published right ones (``right``), and the judge's sensitivity (of those, the ones it
    calls right) and specificity (of the wrong ones, the ones it calls wrong)."""
    counts = _agreement(pd.Series(published), pd.Series(judged))
    right = counts["both_right"] + counts["published_only"]
    wrong = counts["both_wrong"] + counts["ours_only"]
    found = {k: counts[k] for k in ("pairs", "agreement", "kappa")} | {"right": right}
    for name, hits, total in (
        ("sensitivity", counts["both_right"], right),
        ("specificity", counts["both_wrong"], wrong),
    ):
        interval = proportion_interval(hits, total) if total else None
        found[name] = interval.mean if interval else None
        found[f"{name}_low"] = interval.low if interval else None
        found[f"{name}_high"] = interval.high if interval else None
    return found


def corrected_table(plan: Plan, scores: pd.DataFrame, calibration: pd.DataFrame) -> pd.DataFrame:
    """Each run of this config's own models a judge scored: its raw judged accuracy per
    benchmark and the accuracy corrected for the judge's measured error rates."""
    rows = []
    imported = {r.label for r in plan.runs if r.imported}
    for judged in CALIBRATED:
        of = scores[(scores.metric == judged) & ~scores.run.isin(imported)]
        for (run, benchmark), group in of.groupby(["run", "benchmark"], sort=False):
            pooled = calibration[
                (calibration.scorer == judged) & (calibration.benchmark == benchmark)
                & (calibration.tag == "all") & (calibration.system == POOLED)
            ]  # fmt: skip
            raw = float(group.score.mean())
            row = {"run": run, "benchmark": benchmark, "scorer": judged, "judged": len(group)}
            row |= {"raw": raw, "calibrated_on": 0}
            if not pooled.empty:
                row |= _corrected(raw, len(group), pooled.iloc[0])
            rows.append(row)
    return _rounded(pd.DataFrame(rows, columns=CORRECTED_COLUMNS))


def _corrected(raw: float, n: int, cal, draws: int = 10_000) -> dict:
    """Rogan-Gladen's correction and its interval (module constant's text)."""
    positives = int(cal.right)
    negatives = int(cal.pairs) - positives
    se, sp = float(cal.sensitivity), float(cal.specificity)
    point = _rogan_gladen(raw, se, sp)
    rng = np.random.default_rng(0)
    raw_draws = rng.beta(raw * n + 0.5, (1 - raw) * n + 0.5, draws)
    se_draws = rng.beta(se * positives + 0.5, (1 - se) * positives + 0.5, draws)
    sp_draws = rng.beta(sp * negatives + 0.5, (1 - sp) * negatives + 0.5, draws)
    values = _rogan_gladen(raw_draws, se_draws, sp_draws)
    low, high = (
        np.nanquantile(values, [0.025, 0.975]) if np.isfinite(values).any() else (None, None)
    )
    return {
        "corrected": point,
        "corrected_low": None if low is None else float(low),
        "corrected_high": None if high is None else float(high),
        "calibrated_on": int(cal.pairs),
    }


def _rogan_gladen(raw, se, sp):
    informative = np.asarray(se + sp - 1.0)
    value = np.where(informative > 1e-9, (raw + sp - 1.0) / np.maximum(informative, 1e-9), np.nan)
    clipped = np.clip(value, 0.0, 1.0)
    return float(clipped) if np.ndim(clipped) == 0 else clipped


# A jury's judges against each other (scoring.judge.model a list).
JURY_COLUMNS = [
    "scorer", "benchmark", "judges", "questions", "alpha", "agreement", "disagreements",
]  # fmt: skip
DISAGREEMENT_COLUMNS = ["run", "benchmark", "task", "scorer", "question_id", "verdict", "votes"]
JURY_TEXT = (
    "A jury's judges against each other, per grading scorer and benchmark, over every "
    "answer they judged (`judge_agreement.csv`): Krippendorff's alpha (nominal, by the "
    "`krippendorff` package; an undecided verdict is a missing one), the share of answers "
    "on which every judge gave the same verdict, and how many they did not, each listed "
    "with every judge's verdict and the jury's by its rule (`judge_disagreements.csv`)"
)
_CODES = {"correct": 1.0, "incorrect": 0.0}


def jury_tables(plan: Plan, summaries: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(agreement per scorer and benchmark, every disagreement) of a jury's judges."""
    votes = [
        {"run": run.label, **vote}
        for run in plan.runs
        for vote in summaries[run.label].get("jury") or []
    ]
    agreement, disagreements = [], []
    by: dict[tuple, list[dict]] = {}
    for vote in votes:
        vote["differ"] = len(set(vote["votes"].values())) > 1
        by.setdefault((vote["scorer"], vote["benchmark"]), []).append(vote)
        if vote["differ"]:
            said = "; ".join(f"{j}: {v}" for j, v in vote["votes"].items())
            disagreements.append({**{k: vote[k] for k in DISAGREEMENT_COLUMNS[:-1]}, "votes": said})
    for (scorer, benchmark), of in by.items():
        judges = list(dict.fromkeys(j for vote in of for j in vote["votes"]))
        data = np.array([[_CODES.get(vote["votes"].get(j), np.nan) for vote in of] for j in judges])
        split = sum(vote["differ"] for vote in of)
        agreement.append(
            {"scorer": scorer, "benchmark": benchmark, "judges": ", ".join(judges),
             "questions": len(of), "alpha": _alpha(data),
             "agreement": (len(of) - split) / len(of), "disagreements": split}
        )  # fmt: skip
    return (
        _rounded(pd.DataFrame(agreement, columns=JURY_COLUMNS)),
        pd.DataFrame(disagreements, columns=DISAGREEMENT_COLUMNS),
    )


def _alpha(data: np.ndarray) -> float | None:
    """Krippendorff's alpha of judges x answers (nan: no verdict); None where it is not
    defined (fewer than two values paired, or a single value throughout)."""
    import krippendorff

    paired = (~np.isnan(data)).sum(axis=0) >= 2
    values = set(data[:, paired][~np.isnan(data[:, paired])].tolist())
    if paired.sum() == 0 or len(values) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
