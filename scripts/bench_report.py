#!/usr/bin/env python3
"""Merges the engine benchmark and its peer into one record and prints the table.

usage: bench_report.py ENGINE_JSON PEER_JSON OUT_JSON
"""
import json
import sys

engine_json, peer_json, out_json = sys.argv[1:4]
engine = json.load(open(engine_json))
try:
    peer = {(c["name"], tuple(c["shape"])): c for c in json.load(open(peer_json))["cases"]}
    engine["peer"] = json.load(open(peer_json))["peer"]
except (OSError, ValueError, KeyError):
    peer = {}
    engine["peer"] = "not measured"

print(f"GPU: {engine['gpu']}   timer: {engine['timer']}")
print(f"{'case':<12} {'shape':<14} {'EDT ms':>8} {'LT ms':>8} {'PSD ms':>8} {'copy ms':>8} "
      f"{'LT B/vox':>9} {'peer ms':>9} {'peer B/vox':>10} {'speed-up':>9}")
for c in engine["cases"]:
    p = peer.get((c["name"], tuple(c["shape"])))
    if p:
        c["peer_lt_ms"] = p["peer_lt_ms"]
        c["peer_bytes_per_voxel"] = p["peer_bytes_per_voxel"]
        c["speedup_vs_peer"] = p["peer_lt_ms"] / c["lt_map_ms"]
    shape = "x".join(str(s) for s in c["shape"])
    print(f"{c['name']:<12} {shape:<14} {c['edt_ms']:>8.3f} {c['lt_map_ms']:>8.3f} {c['psd_only_ms']:>8.3f} "
          f"{c['copy_ms']:>8.3f} {c['lt_bytes_per_voxel']:>9.2f} "
          + (f"{p['peer_lt_ms']:>9.1f} {p['peer_bytes_per_voxel']:>10.1f} {c['speedup_vs_peer']:>8.1f}x" if p else
             f"{'-':>9} {'-':>10} {'-':>9}"))
json.dump(engine, open(out_json, "w"), indent=2)
