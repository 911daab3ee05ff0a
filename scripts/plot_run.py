#!/usr/bin/env python3
"""Pictures of a poreforge run: energy and temperature against evaluations, pore PSD and
directional S2 (target against achieved), and orthogonal mid-slices of the reconstruction
next to the reference image's (when the run's target is an image this script can read).

usage: scripts/plot_run.py RUN_DIR        (writes RUN_DIR/plots/*.png)
"""
import os
import sys

try:
    import csv

    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import yaml
except ImportError as missing:  # the interpreter on PATH may lack them; Debian's has them after scripts/setup
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"plot_run.py: {missing}; run scripts/setup (python3-matplotlib, python3-h5py, python3-yaml)")


def read_reference(config, run_dir):
    """The target image as a 3D array, when it is HDF5 or raw (None otherwise)."""
    target = config.get("target", {})
    path = target.get("image")
    if not path or not os.path.exists(path):
        return None
    phase = target.get("phase", 1)
    if target.get("format", "auto") in ("raw",) or path.endswith((".raw", ".bin", ".dat")):
        nx, ny, nz = target["shape"]
        dtype = {"u8": np.uint8, "u16": np.uint16, "i32": np.int32, "f32": np.float32}[target.get("dtype", "u8")]
        return np.fromfile(path, dtype=dtype).reshape(nz, ny, nx) == phase
    if path.endswith((".h5", ".hdf5", ".hdf")):
        with h5py.File(path, "r") as f:
            name = target.get("dataset") or next(k for k in f if isinstance(f[k], h5py.Dataset) and f[k].ndim == 3)
            return f[name][...] == phase
    return None


def mid_slices(ax_row, volume, title):
    nz, ny, nx = volume.shape
    for ax, (image, label) in zip(ax_row, [(volume[nz // 2], "z mid-plane"), (volume[:, ny // 2, :], "y mid-plane"),
                                           (volume[:, :, nx // 2], "x mid-plane")]):
        ax.imshow(image, cmap="gray", interpolation="nearest")
        ax.set_title(f"{title}: {label}", fontsize=9)
        ax.set_axis_off()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = sys.argv[1]
    out = os.path.join(run, "plots")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(run, "config.yaml")) as f:
        config = yaml.safe_load(f)

    rows = list(csv.DictReader(open(os.path.join(run, "energy.csv"))))
    ev = [int(r["evaluations"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ev, [float(r["energy"]) for r in rows], label="energy")
    for term in ("pore_psd", "solid_psd", "s2"):
        values = [float(r[term]) for r in rows]
        if any(values):
            ax.plot(ev, values, "--", linewidth=1, label=term)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("energy (each term / its initial error)")
    ax.set_yscale("log")
    ax2 = ax.twinx()
    ax2.plot(ev, [float(r["temperature"]) for r in rows], color="tab:red", linewidth=1, label="temperature")
    ax2.set_yscale("log")
    ax2.set_ylabel("temperature", color="tab:red")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "energy.png"), dpi=120)

    with h5py.File(os.path.join(run, "descriptors.h5"), "r") as d:
        edges = d["/target/psd/pore/edges"][...]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.stairs(d["/target/psd/pore/fraction"][...], edges, label="target", linewidth=2)
        ax.stairs(d["/achieved/psd/pore/fraction"][...], edges, label="reconstruction")
        ax.set_xlabel("local thickness, radius (physical units)")
        ax.set_ylabel("fraction of pore volume")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "psd.png"), dpi=120)

        fig, ax = plt.subplots(figsize=(6, 4))
        for axis, colour in zip("xyz", ("tab:blue", "tab:orange", "tab:green")):
            target, achieved = d[f"/target/s2/{axis}"][...], d[f"/achieved/s2/{axis}"][...]
            ax.plot(np.arange(len(target)), target, color=colour, linewidth=2, alpha=0.5, label=f"target {axis}")
            ax.plot(np.arange(len(achieved)), achieved, "--", color=colour, label=f"reconstruction {axis}")
        ax.set_xlabel("r (voxels)")
        ax.set_ylabel("S2(r)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "s2.png"), dpi=120)

    with h5py.File(os.path.join(run, "final.h5"), "r") as f:
        final = f["/volume"][...]
    reference = read_reference(config, run)
    rows_n = 2 if reference is not None else 1
    fig, axes = plt.subplots(rows_n, 3, figsize=(10, 3.4 * rows_n), squeeze=False)
    mid_slices(axes[0], final, "reconstruction")
    if reference is not None:
        mid_slices(axes[1], reference, "reference")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "slices.png"), dpi=120)
    print(f"wrote {out}/energy.png, psd.png, s2.png, slices.png")


if __name__ == "__main__":
    main()
