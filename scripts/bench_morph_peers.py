#!/usr/bin/env python3
"""Peers of the CUDA morphology benchmark, on the GPU machine, in the same gpu-check run.

The second post's pipeline (erode 7x7 once, dilate 7x7 four times) on 3840x2160 uint8 masks:
  - OpenCV CPU (cv2.erode / cv2.dilate) with 1 and all threads, frames per second;
  - CuPy grey_erosion / grey_dilation, resident on the device and with upload + download.
A 512^3 dilation by a ball of radius 10 with CuPy: one distance_transform_edt of the
complement, thresholded at r (the same definition as poreforge's).

Host clocks time the CPU peer (no GPU work); CUDA events time the CuPy runs.

usage: bench_morph_peers.py OUT_JSON [VOLUME_RAW_512]
"""
import json
import os
import statistics
import sys
import time

import numpy as np

out_path = sys.argv[1]
volume_path = sys.argv[2] if len(sys.argv) > 2 else None
FRAMES = 16
rng = np.random.default_rng(1)
frames = [(rng.random((2160, 3840)) < 0.5).astype(np.uint8) for _ in range(FRAMES)]
result = {"benchmark": "morph_peers", "frame": [3840, 2160],
          "pipeline": "erode box 7x7 x1, dilate box 7x7 x4"}


def median_of(fn, reps):
    return statistics.median(fn() for _ in range(reps))


try:
    import cv2
    kernel = np.ones((7, 7), np.uint8)
    result["opencv_version"] = cv2.__version__
    opencv = {}
    for threads in (1, os.cpu_count()):
        cv2.setNumThreads(threads)

        def one(i=[0]):
            f = frames[i[0] % FRAMES]
            i[0] += 1
            t0 = time.perf_counter()
            cv2.dilate(cv2.erode(f, kernel, iterations=1), kernel, iterations=4)
            return time.perf_counter() - t0
        for _ in range(3):
            one()
        ms = 1000 * median_of(one, 40)
        opencv[str(threads)] = {"ms_per_frame": ms, "fps": 1000 / ms}
        print(f"OpenCV {cv2.__version__}, {threads:2d} threads: {ms:.3f} ms/frame = {1000 / ms:.0f} FPS", flush=True)
    result["opencv_cpu"] = opencv
except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
    result["opencv_cpu"] = f"not measured: {e}"
    print("OpenCV peer failed:", e)

try:
    import cupy as cp
    from cupyx.scipy import ndimage as cnd
    result["cupy_version"] = cp.__version__
    result["gpu"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def pipeline(d):
        e = cnd.grey_erosion(d, size=(7, 7))
        for _ in range(4):
            e = cnd.grey_dilation(e, size=(7, 7))
        return e

    from bench_cupy_peer import timed  # CUDA events, median (the engine peer's timer)

    def event_ms(fn, warm=3, reps=30):
        for _ in range(warm):
            fn()
        return timed(fn, reps)

    device_frames = [cp.asarray(f) for f in frames[:4]]
    resident = event_ms(lambda: pipeline(device_frames[0]))
    counter = [0]

    def with_transfers():
        f = frames[counter[0] % FRAMES]
        counter[0] += 1
        return cp.asnumpy(pipeline(cp.asarray(f)))
    transfers = event_ms(with_transfers)
    result["cupy"] = {"resident_ms_per_frame": resident, "resident_fps": 1000 / resident,
                      "transfers_ms_per_frame": transfers, "transfers_fps": 1000 / transfers}
    print(f"CuPy {cp.__version__} grey_erosion/grey_dilation: resident {resident:.3f} ms = {1000 / resident:.0f} FPS, "
          f"with transfers {transfers:.3f} ms = {1000 / transfers:.0f} FPS", flush=True)
    del device_frames

    if volume_path and os.path.exists(volume_path):
        vol = cp.asarray(np.fromfile(volume_path, np.uint8).reshape(512, 512, 512))

        def ball():
            dt = cnd.distance_transform_edt(vol == 0)  # distance of each unset voxel to the set
            return (vol != 0) | (dt <= 10)
        ms = event_ms(ball, warm=1, reps=5)
        result["cupy_ball_512"] = {"radius": 10, "ms": ms, "method": "distance_transform_edt of the complement <= r"}
        print(f"CuPy 512^3 ball r=10 dilation (EDT): {ms:.1f} ms", flush=True)
except Exception as e:  # noqa: BLE001
    result.setdefault("cupy", f"not measured: {e}")
    print("CuPy peer failed:", e)

json.dump(result, open(out_path, "w"), indent=2)
