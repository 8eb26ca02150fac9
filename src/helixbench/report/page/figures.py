"""The report's figures, each saved as PNG and SVG with matplotlib (Agg: no screen).

SVG is written with fonts as paths and a fixed hash salt and no date, so the same
numbers give the same bytes."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..text import NO_INTERVAL, counted  # noqa: E402

FORMATS = ("png", "svg")
FIGURES = ("leaderboard", "ablation", "percentile", "robustness")
# Narrow enough that a phone shows the figure near its natural size (about 460 px):
# its text stays readable at 420 px wide, and wider screens scale it up.
WIDTH_IN = 4.8
# A run and dataset with fewer sets than this has no distribution worth a curve.
MIN_SETS = 5
# Runs drawn per benchmark on the leaderboard figure (a sweep's thousand bars are read by
# no one; leaderboard.csv has them all).
TOP_RUNS = 15


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
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.0))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=10)
    return fig


def leaderboard_figure(board: pd.DataFrame, out_dir: Path) -> None:
    """Macro score per run on extracted answers with its 95% bootstrap interval, and
    the upstream (strict formatting) score beside it; imported runs hatched, runs that
    cover fewer of their benchmark's tasks paler and labelled so. Each run's label
    stands above its bar, so the plot keeps the figure's whole width. The first
    :data:`TOP_RUNS` of each benchmark, ties at the cut included up to as many again;
    the runs left out are counted under the plot."""
    data = board.dropna(subset=["extracted"])
    if data.empty:
        return _save(_empty("no run with a macro score"), out_dir, "leaderboard")
    ranked = data[data["rank"] <= TOP_RUNS]
    # (a sweep of like systems ties by the hundred: a bar each would take minutes to draw
    # and be unreadable)
    data = ranked.groupby("benchmark", sort=False).head(2 * TOP_RUNS)
    left_out = len(board) - len(data)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 0.62 * len(data) + 0.9))
    y = np.arange(len(data))
    ax.barh(
        y,
        data.extracted,
        height=0.45,
        color=["#a9bbd9" if partial else "#4c72b0" for partial in data.partial],
        hatch=["//" if imported else "" for imported in data.imported],
        edgecolor="white",
    )
    told = data.ci_low.notna().to_numpy()  # (no interval on too few questions)
    ax.errorbar(
        data.extracted[told],
        y[told],
        xerr=[(data.extracted - data.ci_low)[told], (data.ci_high - data.extracted)[told]],
        fmt="none",
        ecolor="black",
        capsize=3,
    )
    ax.scatter(data.genegpt, y, marker="|", s=150, color="#dd8452", label="upstream", zorder=3)
    for row, at in zip(data.itertuples(), y, strict=True):
        covers = (
            f", {row.tasks} of {row.benchmark_tasks} tasks, {row.answers} answers"
            if row.partial
            else ""
        )
        unsure = f"; {NO_INTERVAL}" if pd.isna(row.ci_low) else ""
        rank = "apart:" if pd.isna(row.rank) else f"#{row.rank}"
        label = f"{rank} {row.run} ({row.benchmark}{covers}{unsure})"
        ax.text(0, at - 0.3, label, fontsize=9, va="bottom")
    ax.set_yticks([])
    ax.set_ylim(len(data) - 0.5, -0.95)
    ax.set_xlim(0, 1)
    more = f"; {counted(left_out, 'more run')} in leaderboard.csv" if left_out else ""
    ax.set_xlabel(f"macro score, extracted answers (95% interval){more}", fontsize=9)
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
        fig, ax = plt.subplots(figsize=(6, 4))
        table.T.plot.bar(ax=ax, width=0.8)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_ylabel("change against full (111111)")
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelrotation=35)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
        ax.legend(title="model, mask", fontsize=8)
    else:
        fig, ax = plt.subplots(figsize=(6, 0.22 * len(table) + 2))
        image = ax.imshow(table.values, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
        ax.set_yticks(range(len(table)), table.index, fontsize=7)
        ax.set_xticks(range(len(table.columns)), table.columns, rotation=35, ha="right")
        fig.colorbar(image, ax=ax, label="change against full (111111)")
    _save(fig, out_dir, "ablation")


def percentile_figure(percentiles: pd.DataFrame, out_dir: Path) -> None:
    """GeneAgent's Fig. 2c: per run and dataset, the share of sets whose true name
    ranks at or above each background percentile (runs and datasets of at least
    :data:`MIN_SETS` sets; fewer make no distribution)."""
    if percentiles.empty:
        return _save(_empty("no gene-set run scored by percentile"), out_dir, "percentile")
    groups = [
        (key, group)
        for key, group in percentiles.groupby(["run", "dataset"], sort=False)
        if len(group) >= MIN_SETS
    ]
    if not groups:
        message = f"no run and dataset with {MIN_SETS} or more sets: no distribution to draw"
        return _save(_empty(message), out_dir, "percentile")
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.6))
    for (run, dataset), group in groups:
        values = sorted(group.score * 100)
        shares = [sum(v >= x for v in values) / len(values) for x in values]
        ax.step(values, shares, where="post", label=f"{run} ({dataset}, n={len(values)})")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("background percentile of the true name", fontsize=9)
    ax.set_ylabel("share of sets at or above", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, frameon=False)
    _save(fig, out_dir, "percentile")


def robustness_figure(robustness: pd.DataFrame, out_dir: Path) -> None:
    """Hu et al.'s Fig. 3 in our terms: per run on their sets at each contamination
    level, the share of sets named (left) and the mean stated confidence (right)."""
    levels = robustness[robustness.task.str.startswith("Hu GO 100")]
    levels = levels.groupby("run").filter(lambda g: g.contamination.nunique() > 1)
    if levels.empty:
        message = "no run on Hu et al.'s sets at two or more contamination levels"
        return _save(_empty(message), out_dir, "robustness")
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH_IN, 2.8), sharex=True)
    for run, group in levels.groupby("run", sort=False):
        group = group.sort_values("contamination")
        for ax, metric in zip(axes, ("named", "confidence"), strict=True):
            shown = group.dropna(subset=[metric])
            ax.plot(shown.contamination, shown[metric], marker="o", label=run)
    for ax, title in zip(axes, ("share of sets named", "mean stated confidence"), strict=True):
        ax.set_title(title, fontsize=9)
        ax.set_xticks([0, 50, 100])
        ax.set_xlabel("genes replaced (%)", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.tick_params(labelsize=8)
    axes[0].legend(loc="upper center", bbox_to_anchor=(1.1, -0.3), fontsize=8, frameon=False)
    _save(fig, out_dir, "robustness")
