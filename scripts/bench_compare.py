#!/usr/bin/env python3
"""The cost of judging a reconstruction: `poreforge compare` of a 128³ structure against
12 sub-volumes of the Berea 400³ image, and the realism measures of the whole image (with
its formation factor and permeability next to the published figures).

usage: scripts/bench_compare.py POREFORGE OUT.json [--backend cpu|cuda] [--size N]
                                [--permeability on|off] [--whole on|off] [--jobs N ...]

Prints a table and writes OUT.json (and OUT.txt beside it: the table). --jobs: compare's
volumes measured at once, one run for each value given (0: its default). The structure judged
is porosity-matched blobs (`poreforge generate blobs`): the benchmark times the measures, not
a reconstruction. Wall-clock times of whole commands, each run once (the commands are long
and their parts are timed by their own reports).
"""
import argparse
import json
import os
import sys
import tempfile

from benchlib import timed

PUBLISHED = {"formation_factor": "23-25", "permeability_mD": "1,200-1,400"}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("poreforge")
    p.add_argument("json")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--permeability", default="off", choices=["on", "off"])
    p.add_argument("--whole", default="off", choices=["on", "off"])
    p.add_argument("--reference", default="data/berea_400.h5")
    p.add_argument("--jobs", type=int, nargs="+", default=[0])
    a = p.parse_args()

    work = tempfile.mkdtemp(prefix="bench-compare-")
    recon = os.path.join(work, "blobs.h5")
    n = a.size
    timed([a.poreforge, "generate", "blobs", "--shape", f"{n},{n},{n}", "--porosity", "0.196", "--seed", "1",
           "--blobiness", "1", "-o", recon])
    runs = []
    for jobs in a.jobs:
        report = os.path.join(work, f"report-{jobs}.json")
        command = [a.poreforge, "compare", recon, "--reference", a.reference, "--subvolumes", "12",
                   "--backend", a.backend, "--permeability", a.permeability, "-o", report]
        if jobs > 0:
            command += ["--jobs", str(jobs)]
        seconds, _ = timed(command)
        compare = json.load(open(report))
        runs.append({"compare_seconds": seconds, "jobs": compare.get("jobs", 1),
                     "seconds_by_stage": compare.get("seconds_by_stage", {}),
                     "measures": compare["measures"], "outside": compare["outside"],
                     "typical_real_outside": compare["typical_real_outside"]})
    record = {
        "benchmark": "compare",
        "backend": a.backend,
        "device": compare.get("device", ""),
        "version": compare.get("version", ""),
        "reconstruction": f"blobs {n}^3, porosity 0.196",
        "reference": a.reference,
        "subvolumes": len(compare["subvolume_corners"]),
        "permeability": a.permeability == "on",
        "runs": runs,
    }
    lines = [f"poreforge compare, backend {a.backend} ({record['device']}): blobs {n}^3 against 12 sub-volumes of "
             f"{a.reference}, permeability {a.permeability}"]
    for run in runs:
        stages = ", ".join(f"{k} {v:.2f}" for k, v in run["seconds_by_stage"].items())
        lines.append(f"  {run['jobs']} volume(s) at a time: wall time of the whole command {run['compare_seconds']:.1f} s "
                     f"({run['measures']} measures; the blobs are outside on {run['outside']}, a real sub-volume on "
                     f"{run['typical_real_outside']:g})")
        lines.append(f"    stage seconds summed over the volumes: {stages}")
    if a.whole == "on":
        desc = os.path.join(work, "whole.h5")
        whole_s, out = timed([a.poreforge, "describe", a.reference, "-o", desc, "--measures", "--backend", a.backend,
                              "--permeability", a.permeability])
        record["whole_seconds"] = whole_s
        lines.append(f"  the whole reference's measures (describe --measures): {whole_s:.1f} s")
        for line in out.splitlines():
            if any(k in line for k in ("formation_factor", "permeability", "porosity", "spanning_share_x")):
                lines.append("    " + line.strip())
        lines.append(f"  published for this image: formation factor {PUBLISHED['formation_factor']}, "
                     f"permeability {PUBLISHED['permeability_mD']} mD")
    text = "\n".join(lines)
    print(text)
    json.dump(record, open(a.json, "w"), indent=2)
    with open(os.path.splitext(a.json)[0] + ".txt", "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
