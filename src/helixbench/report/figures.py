"""The report's figures, each saved as PNG and SVG with matplotlib (Agg: no screen).

SVG is written with fonts as paths and a fixed hash salt and no date, so the same
numbers give the same bytes."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

FORMATS = ("png", "svg")
FIGURES = ("leaderboard", "ablation", "percentile")


def _save(fig, out_dir: Path, name: str) -> None:
    plt.rcParams["svg.hashsalt"] = "helixbench"
    for fmt in FORMATS:
        fig.savefig(
            out_dir / f"{name}.{fmt}",
            dpi=150,
            bbox_inches="tight",
            metadata={"Date": None} if fmt == "svg" else {"Software": None},
        )
    plt.close(fig)


def _empty(message: str):
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=10)
    return fig


def leaderboard_figure(board: pd.DataFrame, out_dir: Path) -> None:
    """Macro score per run on extracted answers with its 95% bootstrap interval, and
    the upstream (strict formatting) score beside it; imported runs hatched."""
    data = board.dropna(subset=["extracted"])
    if data.empty:
        return _save(_empty("no run with a macro score"), out_dir, "leaderboard")
    labels = [f"{r.run} ({r.benchmark})" for r in data.itertuples()]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(data) + 1.2))
    y = range(len(data))
    ax.barh(
        list(y),
        data.extracted,
        color="#4c72b0",
        hatch=["//" if imported else "" for imported in data.imported],
        edgecolor="white",
    )
    ax.errorbar(
        data.extracted,
        list(y),
        xerr=[data.extracted - data.ci_low, data.ci_high - data.extracted],
        fmt="none",
        ecolor="black",
        capsize=3,
    )
    ax.scatter(
        data.genegpt, list(y), marker="|", s=200, color="#dd8452", label="upstream", zorder=3
    )
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("macro score on extracted answers (95% bootstrap interval; hatched: imported)")
    ax.legend(loc="lower right", fontsize=8)
    _save(fig, out_dir, "leaderboard")


def ablation_figure(ablation: pd.DataFrame, out_dir: Path) -> None:
    """GeneGPT's Figure 2: each mask's change against the full prompt, per task."""
    if ablation.empty:
        message = "no ablation: run a mask and the full prompt (111111) with the same model"
        return _save(_empty(message), out_dir, "ablation")
    table = ablation.assign(label=ablation["model"] + " " + ablation["mask"]).pivot_table(
        index="label", columns="task", values="change", sort=False
    )
    if len(table) <= 6:
        fig, ax = plt.subplots(figsize=(9, 4))
        table.T.plot.bar(ax=ax, width=0.8)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_ylabel("change against full (111111)")
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelrotation=35)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
        ax.legend(title="model, mask", fontsize=8)
    else:
        fig, ax = plt.subplots(figsize=(9, 0.22 * len(table) + 2))
        image = ax.imshow(table.values, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
        ax.set_yticks(range(len(table)), table.index, fontsize=7)
        ax.set_xticks(range(len(table.columns)), table.columns, rotation=35, ha="right")
        fig.colorbar(image, ax=ax, label="change against full (111111)")
    _save(fig, out_dir, "ablation")


def percentile_figure(percentiles: pd.DataFrame, out_dir: Path) -> None:
    """GeneAgent's Fig. 2c: per run and dataset, the share of sets whose true name
    ranks at or above each background percentile."""
    if percentiles.empty:
        return _save(_empty("no gene-set run scored by percentile"), out_dir, "percentile")
    fig, ax = plt.subplots(figsize=(7, 4))
    for (run, dataset), group in percentiles.groupby(["run", "dataset"], sort=False):
        values = sorted(group.score * 100)
        shares = [sum(v >= x for v in values) / len(values) for x in values]
        ax.step(values, shares, where="post", label=f"{run} ({dataset}, n={len(values)})")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("background percentile of the true name")
    ax.set_ylabel("share of sets at or above")
    ax.legend(loc="lower left", fontsize=7)
    _save(fig, out_dir, "percentile")
