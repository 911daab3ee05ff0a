#!/usr/bin/env python3
"""The Python module against PoreSpy on the same volumes: local thickness and pore-size
distribution, agreement and speed side by side.

    PYTHONPATH=build/python python3 scripts/bench_python.py [--sizes 64,128] [--backend cpu] [-o results/bench/python_cpu.json]

Volumes: PoreSpy's own blobs (porosity 0.35, blobiness 1.5, seed 1), pore = True. poreforge's
local thickness is exact; PoreSpy's ``filters.local_thickness`` rounds every radius down to its
list of ``sizes`` (25 by default), so agreement is measured the way PoreSpy defines its result:
the share of pore voxels where PoreSpy's value equals poreforge's exact radius rounded down to
PoreSpy's sizes, and the L1 distance between the two PSDs with PoreSpy's sizes as bin edges. Times are the
median of ``--repeats`` whole calls after one warm-up call (a module call returns a host array,
so the wall clock of the call is what a user waits for). Prints a table; writes JSON.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128", help="cube edges, comma-separated")
    parser.add_argument("--backend", default="cpu", help="poreforge's backend: cpu, cuda or auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes-porespy", type=int, default=25, help="PoreSpy's number of sizes")
    parser.add_argument("-o", "--output", help="JSON record to write")
    args = parser.parse_args()
    try:
        import porespy as ps
    except ImportError:
        sys.exit("bench_python: PoreSpy is not installed (pip install porespy): it is the peer measured here")

    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        im = ps.generators.blobs(shape=[n, n, n], porosity=0.35, blobiness=1.5, seed=1).astype(bool)
        pore = int(im.sum())
        t_pf, exact = timed(lambda: pf.local_thickness(im, boundary="open", backend=args.backend), args.repeats)
        t_ps, theirs = timed(lambda: ps.filters.local_thickness(im, sizes=args.sizes_porespy), args.repeats)
        # PoreSpy's sizes: the radii it tests, largest first; a voxel gets the largest that covers it.
        sizes = np.unique(theirs[im])
        sizes = sizes[sizes > 0]
        index = np.searchsorted(sizes, exact[im], side="right") - 1
        rounded = np.where(index >= 0, sizes[np.clip(index, 0, None)], 0)
        same = float(np.mean(np.isclose(rounded, theirs[im], rtol=1e-6)))
        # Both PSDs on PoreSpy's sizes as bin edges (the last closed at the largest radius of either).
        edges = np.append(sizes, max(float(exact.max()), float(sizes[-1])) + 1e-6)
        t_psd_pf, psd = timed(lambda: pf.pore_size_distribution(im, bins=edges, backend=args.backend), args.repeats)
        theirs_hist = np.histogram(theirs[im], bins=edges)[0] / pore
        l1 = float(np.abs(psd.fraction - theirs_hist).sum())
        rows.append({"shape": [n, n, n], "pore_voxels": pore,
                     "poreforge_local_thickness_s": t_pf, "porespy_local_thickness_s": t_ps,
                     "speedup": t_ps / t_pf, "poreforge_psd_s": t_psd_pf,
                     "share_equal_after_rounding_to_porespy_sizes": same,
                     "psd_l1_on_porespy_sizes": l1,
                     "max_radius_poreforge": float(exact.max()), "max_radius_porespy": float(theirs.max())})
        print(f"{n}^3: poreforge {t_pf:.3f} s, PoreSpy {t_ps:.3f} s ({t_ps / t_pf:.1f}x); equal after rounding "
              f"{same:.4f}; PSD L1 {l1:.4f}", flush=True)

    device = pf.backend_description(args.backend)
    print(f"\nlocal thickness, poreforge {pf.__version__} ({device}) against PoreSpy {ps.__version__} "
          f"(filters.local_thickness, {args.sizes_porespy} sizes); median of {args.repeats} calls after a warm-up")
    print(f"{'shape':>12} {'poreforge s':>12} {'PoreSpy s':>10} {'speed-up':>9} {'equal*':>8} {'PSD L1':>8}")
    for r in rows:
        print(f"{'x'.join(map(str, r['shape'])):>12} {r['poreforge_local_thickness_s']:>12.3f} "
              f"{r['porespy_local_thickness_s']:>10.3f} {r['speedup']:>8.1f}x "
              f"{r['share_equal_after_rounding_to_porespy_sizes']:>8.4f} {r['psd_l1_on_porespy_sizes']:>8.4f}")
    print("* share of pore voxels where PoreSpy's radius is poreforge's exact one rounded down to PoreSpy's sizes")
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
