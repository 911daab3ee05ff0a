#!/usr/bin/env python3
"""The GPU peer for the engine benchmark: local thickness by one
cupyx.scipy.ndimage.distance_transform_edt per integer radius (the method of the CuPy code this
project grew from), on the masks bench_engine_cuda wrote. Timed with CUDA events, median.

usage: bench_cupy_peer.py VOLUMES_DIR ENGINE_JSON OUT_JSON
"""
import json
import os
import sys

import cupy as cp
import numpy as np
from cupyx.scipy import ndimage


def peer_thickness(mask):
    dt = ndimage.distance_transform_edt(mask)
    lt = cp.zeros(mask.shape, dtype=cp.float32)
    for r in range(1, int(dt.max()) + 1):
        reach = ndimage.distance_transform_edt(dt < r)  # distance to the nearest seed (dt ≥ r)
        lt[(reach < r) & mask] = r
    return lt


def timed(fn, reps):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def main():
    volumes, engine_json, out_json = sys.argv[1:4]
    cases = json.load(open(engine_json))["cases"]
    pool = cp.get_default_memory_pool()
    peer_thickness(cp.asarray(np.random.rand(32, 32, 32) < 0.5))  # compile the kernels
    rows = []
    for case in cases:
        nx, ny, nz = case["shape"]
        name = "berea_pore.raw" if case["name"].startswith("berea") else f"blobs_{nx}.raw"
        host = np.fromfile(os.path.join(volumes, name), dtype=np.uint8).reshape(nz, ny, nx)
        mask = cp.asarray(host).astype(bool)
        voxels = host.size
        pool.free_all_blocks()
        reps = 1 if voxels > 200_000_000 else 3
        ms = timed(lambda: peer_thickness(mask), reps)
        peak = pool.total_bytes()  # the pool keeps what the run took
        rows.append({"name": case["name"], "shape": case["shape"], "peer_lt_ms": ms,
                     "peer_bytes_per_voxel": peak / voxels, "reps": reps})
        print(f"cupy peer {case['name']} {nx}x{ny}x{nz}: {ms:.1f} ms, {peak / 2**30:.2f} GiB", flush=True)
        del mask
        pool.free_all_blocks()
    json.dump({"peer": "cupyx.scipy.ndimage.distance_transform_edt per integer radius",
               "cupy": cp.__version__, "cases": rows}, open(out_json, "w"), indent=2)


if __name__ == "__main__":
    main()
