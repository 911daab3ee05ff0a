#!/usr/bin/env python3
"""The Python module against PoreSpy on the same volumes: local thickness and pore-size
distribution, agreement and speed side by side.

    PYTHONPATH=build/python python3 scripts/bench_python.py [--sizes 64,128] [--backend cpu] [-o results/bench/python_cpu.json]

Volumes: PoreSpy's own blobs (porosity 0.35, blobiness 1.5, seed 1), pore = True. poreforge's
local thickness is exact; PoreSpy's ``filters.local_thickness`` rounds every radius down to its
list of ``sizes`` (25 by default), so agreement is measured the way PoreSpy defines its result:
the share of pore voxels where PoreSpy's value equals poreforge's exact radius rounded down to
PoreSpy's sizes, and the L1 distance between the two PSDs with PoreSpy's sizes as bin edges. Times are the
median of ``--repeats`` whole calls after one warm-up call, poreforge's through one
``poreforge.Workspace`` as a loop over images would use it (each call returns a finished
result, so its wall clock is what a user waits for). With ``--backend cuda`` and CuPy, the
same calls on a CuPy array (no host copies) too, checked equal to the NumPy result. Prints a
table; writes JSON.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

import poreforge as pf


def timed(call, repeats):
    call()  # warm-up: first-call costs (a device context, numba's compilation) are not the steady state
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def stand_in_for_pyvista():
    """PoreSpy imports pyvista, and through it VTK, when it loads, for its 3D views and STL
    export only. Where they are missing (the GPU machine's image has no VTK, and its wheels are
    larger than what travels there), a stand-in that refuses every use lets the functions
    measured here load; none of them touches it."""
    try:
        import pyvista  # noqa: F401
    except ImportError:
        import types

        class Refuse(types.ModuleType):
            def __getattr__(self, name):
                raise ImportError(f"pyvista is not installed (bench_python's stand-in has no '{name}')")

        sys.modules["pyvista"] = Refuse("pyvista")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128", help="cube edges, comma-separated")
    parser.add_argument("--backend", default="cpu", help="poreforge's backend: cpu, cuda or auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes-porespy", type=int, default=25, help="PoreSpy's number of sizes")
    parser.add_argument("-o", "--output", help="JSON record to write")
    args = parser.parse_args()
    stand_in_for_pyvista()
    try:
        import porespy as ps
    except ImportError as e:
        sys.exit(f"bench_python: PoreSpy does not load ({e}; pip install porespy): it is the peer measured here")
    try:
        import cupy
    except ImportError:
        cupy = None
    on_device = cupy is not None and args.backend == "cuda"
    workspace = pf.Workspace(args.backend)  # one context for every call, as a loop over images keeps it

    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        im = ps.generators.blobs(shape=[n, n, n], porosity=0.35, blobiness=1.5, seed=1).astype(bool)
        pore = int(im.sum())
        t_pf, exact = timed(lambda: workspace.local_thickness(im, boundary="open"), args.repeats)
        t_cupy = None
        if on_device:  # the image already on the device, the map left there: no copies
            im_device = cupy.asarray(im)
            t_cupy, on_gpu = timed(lambda: workspace.local_thickness(im_device, boundary="open"), args.repeats)
            if not np.array_equal(cupy.asnumpy(on_gpu), exact):
                sys.exit(f"bench_python: at {n}^3 the map from a CuPy array differs from the map from NumPy")
        t_ps, theirs = timed(lambda: ps.filters.local_thickness(im, sizes=args.sizes_porespy), args.repeats)
        # PoreSpy's sizes: the radii it tests, largest first; a voxel gets the largest that covers it.
        sizes = np.unique(theirs[im])
        sizes = sizes[sizes > 0]
        index = np.searchsorted(sizes, exact[im], side="right") - 1
        rounded = np.where(index >= 0, sizes[np.clip(index, 0, None)], 0)
        same = float(np.mean(np.isclose(rounded, theirs[im], rtol=1e-6)))
        # Both PSDs on PoreSpy's sizes as bin edges (the last closed at the largest radius of either).
        edges = np.append(sizes, max(float(exact.max()), float(sizes[-1])) + 1e-6)
        t_psd_pf, psd = timed(lambda: workspace.pore_size_distribution(im, bins=edges), args.repeats)
        theirs_hist = np.histogram(theirs[im], bins=edges)[0] / pore
        l1 = float(np.abs(psd.fraction - theirs_hist).sum())
        rows.append({"shape": [n, n, n], "pore_voxels": pore,
                     "poreforge_local_thickness_s": t_pf, "poreforge_local_thickness_cupy_s": t_cupy,
                     "porespy_local_thickness_s": t_ps,
                     "speedup": t_ps / t_pf, "poreforge_psd_s": t_psd_pf,
                     "share_equal_after_rounding_to_porespy_sizes": same,
                     "psd_l1_on_porespy_sizes": l1,
                     "max_radius_poreforge": float(exact.max()), "max_radius_porespy": float(theirs.max())})
        cupy_text = f", from CuPy {t_cupy:.4f} s" if t_cupy is not None else ""
        print(f"{n}^3: poreforge {t_pf:.3f} s{cupy_text}, PoreSpy {t_ps:.3f} s ({t_ps / t_pf:.1f}x); equal after "
              f"rounding {same:.4f}; PSD L1 {l1:.4f}", flush=True)

    device = pf.backend_description(args.backend)
    print(f"\nlocal thickness, poreforge {pf.__version__} ({device}) against PoreSpy {ps.__version__} "
          f"(filters.local_thickness, {args.sizes_porespy} sizes); median of {args.repeats} calls after a warm-up")
    cupy_head = f" {'from CuPy s':>12}" if on_device else ""
    print(f"{'shape':>12} {'poreforge s':>12}{cupy_head} {'PoreSpy s':>10} {'speed-up':>9} {'equal*':>8} {'PSD L1':>8}")
    for r in rows:
        cupy_cell = f" {r['poreforge_local_thickness_cupy_s']:>12.4f}" if on_device else ""
        print(f"{'x'.join(map(str, r['shape'])):>12} {r['poreforge_local_thickness_s']:>12.3f}{cupy_cell} "
              f"{r['porespy_local_thickness_s']:>10.3f} {r['speedup']:>8.1f}x "
              f"{r['share_equal_after_rounding_to_porespy_sizes']:>8.4f} {r['psd_l1_on_porespy_sizes']:>8.4f}")
    print("* share of pore voxels where PoreSpy's radius is poreforge's exact one rounded down to PoreSpy's sizes")
    print("speed-up: PoreSpy's time over poreforge's from a NumPy array (host copies in and out included)")
    if args.output:
        record = {"benchmark": "python_vs_porespy", "poreforge": pf.__version__, "backend": args.backend,
                  "device": device, "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                  "porespy": ps.__version__, "porespy_sizes": args.sizes_porespy, "repeats": args.repeats,
                  "python": platform.python_version(), "rows": rows}
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            json.dump(record, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, args.output)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
