#!/usr/bin/env python3
"""Pictures of a `poreforge compare` report (its JSON).

usage: scripts/plot_compare.py REPORT.json [-o OUT_DIR]

Writes into OUT_DIR (default: beside the report, `<report>_plots/`):
  scalars.png  every scalar measure: the real sub-volumes' values (dots), their range (bar)
               and the reconstruction's value (diamond; red when outside), each measure scaled
               to its real range so that they share one axis;
  curves.png   every curve: the real min-max band, the real mean and the reconstruction.
"""
import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(v):
    """The report writes non-finite numbers as strings ("inf", "-inf", "nan")."""
    if isinstance(v, str):
        return float(v)
    return float(v)


def scaled(v, lo, hi):
    """A value placed on its measure's real range: 0 at the minimum, 1 at the maximum; values
    beyond it are clipped to [-1.5, 2.5] so one wild measure does not flatten the rest."""
    if math.isinf(v) or math.isnan(v):
        return 2.5 if v > 0 else -1.5
    if hi == lo or math.isinf(hi) or math.isinf(lo):
        return 0.5 if v == lo else (2.5 if v > lo else -1.5)
    return max(-1.5, min(2.5, (v - lo) / (hi - lo)))


def plot_scalars(report, path):
    scalars = report["scalars"]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(scalars) + 1.5))
    for i, s in enumerate(scalars):
        lo, hi = number(s["real_min"]), number(s["real_max"])
        y = len(scalars) - 1 - i
        ax.plot([0, 1], [y, y], color="0.75", linewidth=6, solid_capstyle="butt")
        ax.scatter([scaled(number(v), lo, hi) for v in s["real"]], [y] * len(s["real"]), s=9, color="0.35", zorder=2)
        v = number(s["value"])
        ax.scatter([scaled(v, lo, hi)], [y], marker="D", s=40, zorder=3,
                   color="tab:blue" if s["inside"] else "tab:red")
        ax.text(2.55, y, f"{v:.4g}", va="center", fontsize=7)
    ax.set_yticks(range(len(scalars)))
    ax.set_yticklabels([f'{s["name"]} [{s["unit"]}]' for s in reversed(scalars)], fontsize=7)
    ax.set_xlim(-1.6, 3.0)
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["real min", "real max"])
    ax.set_title(f'{os.path.basename(report["reconstruction"])}: outside on {report["outside"]} of '
                 f'{report["measures"]} measures (a real sub-volume: {report["typical_real_outside"]:g})', fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_curves(report, path):
    curves = report["curves"]
    columns = 4
    rows = max(1, math.ceil(len(curves) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3 * rows), squeeze=False)
    for ax, c in zip(axes.flat, curves):
        x = [number(v) for v in c["x"]]
        ax.fill_between(x, [number(v) for v in c["real_min"]], [number(v) for v in c["real_max"]],
                        color="0.8", label="real min-max")
        ax.plot(x, [number(v) for v in c["real_mean"]], color="0.3", label="real mean")
        ax.plot(x, [number(v) for v in c["value"]], color="tab:blue" if c["inside"] else "tab:red",
                label="reconstruction")
        ax.set_title(f'{c["name"]}: {c["distance_kind"]} {number(c["distance"]):.3g}'
                     f' (real ≤ {max(number(v) for v in c["real_distances"]):.3g})', fontsize=8)
        ax.set_xlabel(c["x_unit"], fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(curves):]:
        ax.axis("off")
    if curves:
        axes.flat[0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    try:
        with open(args.report) as f:
            report = json.load(f)
        report["scalars"], report["curves"]
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_compare: error: {args.report} is not a compare report ({e})", file=sys.stderr)
        return 2
    if not report.get("judged", True):
        print(f"plot_compare: {args.report} compares with a reference of the same shape only: no envelope to draw",
              file=sys.stderr)
        return 2
    out = args.output or os.path.splitext(args.report)[0] + "_plots"
    os.makedirs(out, exist_ok=True)
    plot_scalars(report, os.path.join(out, "scalars.png"))
    plot_curves(report, os.path.join(out, "curves.png"))
    print(f"wrote {out}/scalars.png, {out}/curves.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
