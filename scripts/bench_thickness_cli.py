#!/usr/bin/env python3
"""What a user waits for: `poreforge thickness` one-shot and in a batch, on each backend and
on `auto`, and the Python module's workspace in a loop over host and CuPy images.

    python3 scripts/bench_thickness_cli.py --cli build/poreforge [--sizes 64,128,256] [--batch 8]
        [--image data/berea_400.h5] [-o results/bench/thickness_cli.json]

One-shot: the wall clock of the whole command (process start, device start-up, reading,
engine, writing the compressed map), median of --repeats runs (three times as many below 200³),
the backends taking turns, each backend and `auto` with
the backend it chose and why; the command's own read / engine / write figures beside it.
Batch: --batch images of the largest size (blobs of different seeds) in one command, wall clock
per image. Python (when PYTHONPATH holds the module): a Workspace over the same images, per
image, from NumPy arrays and (with CuPy) from device arrays — each call returns a finished
result, so the wall clock around it is what the loop waits for. Prints a table; writes JSON.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import timed


def figures(stdout):
    """The command's own read / engine / write seconds and the backend line."""
    read = re.search(r"read in ([0-9.]+) s", stdout)
    engine = re.search(r"computed in ([0-9.]+) s", stdout)
    write = re.search(r"wrote .* in ([0-9.]+) s", stdout)
    backend = re.search(r"^backend +(.*)$", stdout, re.M)
    return {"read_s": float(read.group(1)) if read else None, "engine_s": float(engine.group(1)) if engine else None,
            "write_s": float(write.group(1)) if write else None, "chose": backend.group(1) if backend else None}


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True).stdout.strip() or None
    except OSError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--sizes", default="64,128,256")
    parser.add_argument("--image", default="data/berea_400.h5")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backends", default="cpu,cuda,auto")
    parser.add_argument("-o", "--output", default="results/bench/thickness_cli.json")
    args = parser.parse_args()
    backends = args.backends.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="bench_thickness_")
    images = []
    for n in sizes:
        path = os.path.join(work, f"blobs_{n}.h5")
        timed([args.cli, "generate", "blobs", "--shape", f"{n},{n},{n}", "--porosity", "0.35", "--seed", "1", "-o", path])
        images.append((f"blobs {n}^3", path, n ** 3))
    if args.image and os.path.exists(args.image):
        images.append((os.path.basename(args.image), args.image, None))

    one_shot = []
    out = os.path.join(work, "out.h5")
    for name, path, voxels in images:
        # The backends take turns within each repeat, so that the machine's drift (page cache,
        # clocks, other tenants) falls on all of them alike; a small image has more repeats, its
        # run being short beside that noise.
        repeats = args.repeats if voxels is None or voxels >= 200 ** 3 else 3 * args.repeats
        walls = {b: [] for b in backends}
        stdouts = {}
        for _ in range(repeats):
            for backend in backends:
                wall, stdouts[backend] = timed([args.cli, "thickness", path, "-o", out, "--force", "--backend", backend])
                walls[backend].append(wall)
        for backend in backends:
            one_shot.append({"image": name, "backend": backend, "repeats": repeats,
                             "wall_s": statistics.median(walls[backend]), **figures(stdouts[backend])})
            print(f"{name:>16} {backend:>5}: {statistics.median(walls[backend]):7.3f} s  ({one_shot[-1]['chose']})",
                  flush=True)

    n = sizes[-1]
    batch_inputs = []
    for k in range(args.batch):
        path = os.path.join(work, f"batch_{k}.h5")
        timed([args.cli, "generate", "blobs", "--shape", f"{n},{n},{n}", "--porosity", "0.35", "--seed", str(k + 1),
             "-o", path])
        batch_inputs.append(path)
    batch = []
    for backend in backends:
        folder = os.path.join(work, f"batch_out_{backend}")
        wall, stdout = timed([args.cli, "thickness", *batch_inputs, "-o", folder, "--force", "--backend", backend])
        line = re.search(r"^backend +(.*)$", stdout, re.M)
        batch.append({"images": args.batch, "size": n, "backend": backend, "wall_s": wall,
                      "per_image_s": wall / args.batch, "chose": line.group(1) if line else None})
        print(f"batch {args.batch} x {n}^3 {backend:>5}: {wall / args.batch:7.3f} s an image", flush=True)

    python = []
    try:
        import h5py
        import numpy as np

        import poreforge as pf
    except ImportError as e:
        print(f"python: not measured ({e})")
    else:
        arrays = [h5py.File(p)["volume"][...] == 1 for p in batch_inputs]
        kinds = [("numpy", arrays)]
        try:
            import cupy

            if pf._poreforge.cuda_available():
                kinds.append(("cupy", [cupy.asarray(a) for a in arrays]))
        except ImportError:
            pass
        for backend in ["cpu"] + (["cuda"] if pf._poreforge.cuda_available() else []):
            for kind, data in kinds:
                if kind == "cupy" and backend == "cpu":
                    continue
                ws = pf.Workspace(backend)
                ws.local_thickness(data[0])  # warm-up: the workspace and the device's start-up
                start = time.perf_counter()
                for a in data:
                    ws.local_thickness(a)
                per = (time.perf_counter() - start) / len(data)
                python.append({"backend": backend, "input": kind, "size": n, "images": len(data), "per_image_s": per})
                print(f"python Workspace({backend}) {kind}: {per:7.4f} s an image", flush=True)

    record = {"benchmark": "thickness_cli", "gpu": gpu_name(), "cpu_threads": os.cpu_count(),
              "host": platform.node(), "repeats": args.repeats, "one_shot": one_shot, "batch": batch, "python": python}
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(record, f, indent=1)
    print(f"\n{'image':>16} | " + " | ".join(f"{b:>8}" for b in backends) + " | auto chose")
    for name, _, _ in images:
        rows = {r["backend"]: r for r in one_shot if r["image"] == name}
        chose = rows.get("auto", {}).get("chose") or ""
        print(f"{name:>16} | " + " | ".join(f"{rows[b]['wall_s']:7.3f}s" for b in backends) + f" | {chose}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
