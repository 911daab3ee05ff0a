#!/usr/bin/env python3
"""Mid-slices of a reconstruction beside the same slices of real sub-volumes of its shape.

    scripts/plot_slices.py RECON.h5 --compare REPORT.json [-o slices.png] [--real N]

The real sub-volumes are the ones `poreforge compare` judged the reconstruction against (their
corners are in its JSON report), cut from the report's reference image, so the panels show
structures of one size at one voxel size: the reconstruction's row first, then N real rows
(default 2). HDF5 volumes only (the only 3D dataset of each file; pore = 1 in the
reconstruction, the report's reference phase in the reference).
"""
import argparse
import json
import os
import sys

try:
    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError as e:
    sys.exit(f"plot_slices.py: {e}; run scripts/setup (python3-matplotlib, python3-h5py)")


def volume(path):
    with h5py.File(path, "r") as f:
        sets = []
        f.visititems(lambda name, obj: sets.append(name) if isinstance(obj, h5py.Dataset) and obj.ndim == 3 else None)
        if len(sets) != 1:
            sys.exit(f"plot_slices.py: {path} holds {len(sets)} 3D datasets, not one")
        return f[sets[0]][...]  # [z][y][x]


def mid_slices(v):
    nz, ny, nx = v.shape
    return [("z", v[nz // 2, :, :]), ("y", v[:, ny // 2, :]), ("x", v[:, :, nx // 2])]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reconstruction")
    p.add_argument("--compare", required=True, help="the JSON report of poreforge compare")
    p.add_argument("-o", "--output", default="slices_vs_real.png")
    p.add_argument("--real", type=int, default=2, help="real sub-volumes to show")
    a = p.parse_args()
    report = json.load(open(a.compare))
    reference = report["reference"]
    if not os.path.isabs(reference) and not os.path.exists(reference):
        reference = os.path.join(os.path.dirname(a.compare), reference)
    recon = volume(a.reconstruction) != 0
    ref = volume(reference)
    phase = report.get("reference_phase", 1)
    sx, sy, sz = report["shape"]
    rows = [("reconstruction", recon)]
    for k, (cx, cy, cz) in enumerate(report["subvolume_corners"][: a.real]):
        rows.append((f"real sub-volume {k + 1} at ({cx}, {cy}, {cz})", ref[cz:cz + sz, cy:cy + sy, cx:cx + sx] == phase))
    fig, axes = plt.subplots(len(rows), 3, figsize=(10, 3.4 * len(rows)), squeeze=False)
    for r, (name, v) in enumerate(rows):
        for c, (axis, s) in enumerate(mid_slices(v)):
            ax = axes[r][c]
            ax.imshow(s, cmap="gray", interpolation="nearest", origin="lower")
            ax.set_title(f"{name}: {axis} mid-plane", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("pore white; every panel the same size and voxel size", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
