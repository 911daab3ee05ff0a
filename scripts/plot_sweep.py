#!/usr/bin/env python3
"""A sweep's summary: final energy, pore-PSD L1 and S2 RMS error of every run.

usage: scripts/plot_sweep.py SWEEP_DIR      (reads SWEEP_DIR/summary.csv, writes SWEEP_DIR/summary.png)
"""
import os
import sys

try:
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as missing:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"plot_sweep.py: {missing}; run scripts/setup (python3-matplotlib)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    rows = list(csv.DictReader(open(os.path.join(folder, "summary.csv"))))
    fixed = {"name", "status", "exit_code", "seconds", "stop_reason", "final_energy", "energy_against_random_start", "pore_psd_l1", "s2_rms"}
    keys = [k for k in rows[0] if k not in fixed]
    labels = [", ".join(f"{k}={r[k]}" for k in keys if r[k]) or r["name"] for r in rows]
    ok = [r["status"] == "ok" for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(max(6, 0.6 * len(rows) + 2), 8), sharex=True)
    # The energy against a random start: comparable between runs from different starts.
    for ax, (field, title) in zip(axes, [("energy_against_random_start", "energy vs random start"), ("pore_psd_l1", "pore PSD L1"),
                                         ("s2_rms", "S2 RMS error")]):
        values = [float(r[field]) if r[field] else 0.0 for r in rows]
        ax.bar(range(len(rows)), values, color=["tab:blue" if good else "tab:red" for good in ok])
        ax.set_ylabel(title)
    axes[-1].set_xticks(range(len(rows)))
    axes[-1].set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    axes[0].set_title(f"sweep {os.path.basename(os.path.normpath(folder))} (red: failed runs)")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "summary.png"), dpi=120)
    print(f"wrote {os.path.join(folder, 'summary.png')}")


if __name__ == "__main__":
    main()
