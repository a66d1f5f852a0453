"""PNG figures, drawn with matplotlib's object API (no pyplot state, no display needed).

PNGs are saved without the software tag so equal data give byte-equal files, which keeps
evaluation digests reproducible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

TASK_ORDER = ("GA", "AV", "SC", "AE", "GA_b", "AV_b", "SC_b", "AE_b", "WU")
ACC_STYLE = {"train_acc": ("train", ":"), "val_acc": ("validation", "--"), "test_acc": ("test", "-")}


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    return path


def accuracy_curves(records: list[dict], x: str, path: Path, target: float | None = None) -> Path:
    """Train, validation and test accuracy against ``x`` ("time" or "epoch")."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    xs = [r[x] for r in records]
    for metric, (label, style) in ACC_STYLE.items():
        ys = [r.get(metric) for r in records]
        if any(y is not None for y in ys):
            ax.plot(xs, ys, style, marker="." if len(xs) < 40 else None, label=label)
    if target is not None:
        ax.axhline(target, color="grey", linewidth=0.8, label=f"target {target:.3f}")
    ax.set_xlabel("wall time since training start (s)" if x == "time" else "epoch")
    ax.set_ylabel("accuracy")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def time_breakdown(breakdown: dict, path: Path) -> Path:
    """Seconds spent in each task type (summed over tasks and epochs)."""
    tasks = [t for t in TASK_ORDER if t in breakdown] + sorted(set(breakdown) - set(TASK_ORDER))
    fig = Figure(figsize=(6, 3.5))
    ax = fig.add_subplot()
    secs = [breakdown[t]["seconds"] for t in tasks]
    bars = ax.bar(tasks, secs, color=["tab:blue" if t in ("GA", "SC", "GA_b", "SC_b") else "tab:orange" if t != "WU" else "tab:green" for t in tasks])
    for bar, t in zip(bars, tasks):
        ax.annotate(f"{100 * breakdown[t]['share']:.0f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("seconds (summed over tasks)")
    ax.set_title("time by task type: graph (blue), tensor (orange), weight update (green)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def series_plot(series: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str, path: Path, title: str = "") -> Path:
    """One line per named series of (xs, ys)."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for name, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="." if len(xs) < 40 else None, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def bar_panels(labels: Sequence[str], panels: dict[str, Sequence[float | None]], path: Path, title: str = "") -> Path:
    """Side-by-side bar charts, one panel per measure (e.g. time, cost, value)."""
    fig = Figure(figsize=(3.2 * len(panels), 3.5))
    for i, (measure, values) in enumerate(panels.items(), 1):
        ax = fig.add_subplot(1, len(panels), i)
        ax.bar([str(l) for l in labels], [v if v is not None else 0.0 for v in values])
        ax.set_title(measure, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path)
