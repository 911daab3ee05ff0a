#!/usr/bin/env python3
"""Merges the CUDA morphology benchmark and its peers into one record and prints the table.

usage: bench_morph_report.py MORPH_JSON PEERS_JSON OUT_JSON
"""
import json
import sys

morph_json, peers_json, out_json = sys.argv[1:4]
morph = json.load(open(morph_json))
try:
    peers = json.load(open(peers_json))
except (OSError, ValueError):
    peers = {}
morph["peers"] = peers

best = max(r["fps"] for r in morph["resident"])
pinned = next((s["fps"] for s in morph["streamed"] if s["host_memory"] == "pinned"), 0)
print(f"GPU: {morph['gpu']}   timer: {morph['timer']}")
print(f"4K pipeline ({morph['pipeline']}), 3840x2160 uint8")
print(f"  {'who':<44} {'FPS':>10} {'ours / theirs':>14}")
for r in morph["resident"]:
    print(f"  {'poreforge CUDA, resident, batch ' + str(r['batch']):<44} {r['fps']:>10.0f}")
for s in morph["streamed"]:
    print(f"  {'poreforge CUDA, host->GPU->host, ' + s['host_memory']:<44} {s['fps']:>10.0f}")
ratios = {}
cv = peers.get("opencv_cpu")
if isinstance(cv, dict):
    for threads, v in cv.items():
        ratios[f"resident_vs_opencv_{threads}_threads"] = best / v["fps"]
        print(f"  {'OpenCV CPU, ' + threads + ' threads':<44} {v['fps']:>10.0f} {best / v['fps']:>13.0f}x")
cu = peers.get("cupy")
if isinstance(cu, dict):
    ratios["resident_vs_cupy_resident"] = best / cu["resident_fps"]
    ratios["pinned_stream_vs_cupy_transfers"] = pinned / cu["transfers_fps"] if pinned else None
    print(f"  {'CuPy grey_erosion/dilation, resident':<44} {cu['resident_fps']:>10.0f} {best / cu['resident_fps']:>13.0f}x")
    print(f"  {'CuPy, with upload + download':<44} {cu['transfers_fps']:>10.0f} "
          f"{(pinned / cu['transfers_fps'] if pinned else 0):>13.1f}x")
ball = morph["ball_512"]
line = f"512^3 ball r=10 dilation: poreforge {ball['ms']:.3f} ms"
cb = peers.get("cupy_ball_512")
if isinstance(cb, dict):
    ratios["ball_512_vs_cupy_edt"] = cb["ms"] / ball["ms"]
    line += f", CuPy (EDT) {cb['ms']:.1f} ms, {cb['ms'] / ball['ms']:.0f}x"
print(line)
morph["ratios"] = ratios
json.dump(morph, open(out_json, "w"), indent=2)
