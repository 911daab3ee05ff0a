#!/usr/bin/env python3
"""What a section shows: a reconstruction's slices measured beside real sub-volumes' slices.

    scripts/section_measures.py RECON.h5 [RECON2.h5 ...] --reference REF.h5 [--subvolumes 12]
                                [--seed 5] [--every 2] [--panels OUT.png --key KEY.json]

A geologist judges a reconstruction by its slices, and tells one apart by what no 3D
descriptor weighs much: pinholes of solid in the pores, specks, one-pixel spurs on the outlines,
pores that branch where the rock's are pressed between convex grains. For every `--every`-th
plane normal to z, y and x (the stored volume's axes, z slowest), per 10⁴ pixels:

- specks ≤ 4 px: 8-connected clusters of 4 pixels or fewer, of pore and of solid (a solid
  speck is a pinhole in a pore);
- spurs: pixels with at most 2 of their 8 neighbours of their own phase, inside the section
  (2 pixels or more from its edges) and at its edges, of each phase;
- convexity: the pore sections' area over their convex hull's, weighted by area (sections of
  30 pixels or more, every fourth plane whatever `--every`; n/a where none).

The real sub-volumes are cut at random corners (`--seed`) from the reference, of the first
reconstruction's shape; each measure prints the real min, mean and max and each
reconstruction's value, marked OUT where it falls outside the real range. None of these is an
energy term; the local porosity term's 3×3 and 5×5 squares weigh the spurs' neighbour counts,
not the specks or the convexity.

`--panels` draws six sections of the first reconstruction and six of real sub-volumes, at
random places and shuffled, as panels A–L for a blind test (show the PNG to someone who knows
the rock; `--key` gets which is which). HDF5 volumes only, pore = 1 (the only 3D dataset of
each file).
"""
import argparse
import json
import sys

try:
    import numpy as np
    from scipy import ndimage
    from scipy.spatial import ConvexHull
except ImportError as e:
    sys.exit(f"section_measures.py: {e}; run scripts/setup (python3-h5py, python3-scipy)")

from plot_slices import volume as stored_volume  # noqa: E402  (the one 3D dataset of an HDF5 file)

EIGHT = np.ones((3, 3), int)


AXES = ("z", "y", "x")  # the stored volume's axes, z slowest


def fail(message):
    sys.exit(f"section_measures.py: error: {message}")


def volume(path):
    try:
        v = stored_volume(path)
    except OSError as e:
        fail(f"'{path}': {e}")
    if not np.isin(np.unique(v), (0, 1)).all():
        fail(f"'{path}' is not binary (labels 0 solid, 1 pore expected)")
    return v == 1


def convexity(section):
    lab, n = ndimage.label(section, EIGHT)
    weighted, area = 0.0, 0
    for k, box in enumerate(ndimage.find_objects(lab)):
        m = lab[box] == k + 1
        a = int(m.sum())
        if a < 30:
            continue
        ys, xs = np.nonzero(m)
        # The pixels' corners, so that the hull holds the pixels whole.
        pts = np.concatenate([np.stack([ys + dy, xs + dx], 1) for dy in (0, 1) for dx in (0, 1)])
        weighted += a * (a / ConvexHull(pts).volume)
        area += a
    return weighted, area


def measures(pore, every):
    out = {}
    for axis in range(3):
        pixels = 0
        specks = {"pore": 0, "solid": 0}
        inner = {"pore": 0, "solid": 0}
        edge = {"pore": 0, "solid": 0}
        weighted, area = 0.0, 0
        for i in range(0, pore.shape[axis], every):
            s = np.take(pore, i, axis=axis)
            pixels += s.size
            for name, phase in (("pore", s), ("solid", ~s)):
                lab, n = ndimage.label(phase, EIGHT)
                specks[name] += int((np.bincount(lab.ravel())[1:] <= 4).sum())
                own = ndimage.convolve(phase.astype(int), EIGHT, mode="nearest") - phase
                spur = phase & (own <= 2)
                k = int(spur[2:-2, 2:-2].sum())
                inner[name] += k
                edge[name] += int(spur.sum()) - k
        for i in range(0, pore.shape[axis], 4):
            w, a = convexity(np.take(pore, i, axis=axis))
            weighted += w
            area += a
        at = f"normal to {AXES[axis]}"
        for name in ("pore", "solid"):
            out[f"{at}: {name} specks <= 4 px"] = specks[name] / pixels * 1e4
            out[f"{at}: {name} spurs inside"] = inner[name] / pixels * 1e4
            out[f"{at}: {name} spurs at edges"] = edge[name] / pixels * 1e4
        out[f"{at}: pore convexity"] = weighted / area if area else float("nan")
    return out


def panels(recon, real, rng, path, key_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cut = []
    for k in range(6):
        for kind, v in (("reconstruction", recon), ("real", real[k % len(real)])):
            axis = int(rng.integers(3))
            cut.append((kind, np.take(v, int(rng.integers(v.shape[axis] // 10, v.shape[axis] - v.shape[axis] // 10)), axis=axis)))
    order = rng.permutation(len(cut))
    fig, axes = plt.subplots(3, 4, figsize=(16, 12.5))
    key = {}
    for j, p in enumerate(order):
        a = axes.flat[j]
        a.imshow(cut[p][1], cmap="gray", interpolation="nearest")
        a.set_xticks([])
        a.set_yticks([])
        a.set_title(f"panel {chr(65 + j)}")
        key[chr(65 + j)] = cut[p][0]
    fig.suptitle("pore white; six sections of a reconstruction, six of the real rock")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    with open(key_path, "w") as f:
        json.dump(key, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reconstructions", nargs="+")
    p.add_argument("--reference", required=True)
    p.add_argument("--subvolumes", type=int, default=12)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--every", type=int, default=2, help="measure every N-th plane (default 2)")
    p.add_argument("--panels", help="also draw a blind test's panels here (PNG)")
    p.add_argument("--key", help="with --panels: where to write which panel is which (JSON)")
    a = p.parse_args()
    if bool(a.panels) != bool(a.key):
        fail("--panels and --key go together")
    if a.every < 1 or a.subvolumes < 1:
        fail("--every and --subvolumes must be 1 or more")
    recons = [volume(r) for r in a.reconstructions]
    ref = volume(a.reference)
    shape = recons[0].shape
    if any(r.shape != shape for r in recons):
        fail("the reconstructions differ in shape; measure each against its own sub-volumes")
    if any(r > f for r, f in zip(shape, ref.shape)):
        fail(f"the reference {ref.shape} is smaller than the reconstruction {shape}")
    rng = np.random.default_rng(a.seed)
    real = []
    for _ in range(a.subvolumes):
        o = [int(rng.integers(0, f - r + 1)) for r, f in zip(shape, ref.shape)]
        real.append(ref[o[0]:o[0] + shape[0], o[1]:o[1] + shape[1], o[2]:o[2] + shape[2]])
    rows = [measures(v, a.every) for v in real]
    mine = [measures(v, a.every) for v in recons]
    print(f"{'sections (per 10^4 pixels; convexity 1)':42s} {'real min':>9s} {'mean':>9s} {'max':>9s}  reconstructions")
    for key in rows[0]:
        r = np.array([x[key] for x in rows])
        r = r[~np.isnan(r)]
        if r.size == 0:
            print(f"{key:42s} {'n/a':>9s} {'n/a':>9s} {'n/a':>9s}")
            continue

        def cell(v):
            if np.isnan(v):
                return f"{'n/a':>9s}    "
            return f"{v:9.3f} {'in ' if r.min() <= v <= r.max() else 'OUT'}"

        cells = "  ".join(cell(m[key]) for m in mine)
        print(f"{key:42s} {r.min():9.3f} {r.mean():9.3f} {r.max():9.3f}  {cells}")
    if a.panels:
        panels(recons[0], real, rng, a.panels, a.key)
        print(f"wrote {a.panels} and {a.key}")


if __name__ == "__main__":
    main()
