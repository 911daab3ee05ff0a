#!/usr/bin/env python3
"""The cost of judging a reconstruction: `poreforge compare` of a 128³ structure against
12 sub-volumes of the Berea 400³ image, and the realism measures of the whole image (with
its formation factor and permeability next to the published figures).

usage: scripts/bench_compare.py POREFORGE OUT.json [--backend cpu|cuda] [--size N]
                                [--permeability on|off] [--whole on|off]

Prints a table and writes OUT.json (and OUT.txt beside it: the table). The structure judged
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
    a = p.parse_args()

    work = tempfile.mkdtemp(prefix="bench-compare-")
    recon = os.path.join(work, "blobs.h5")
    n = a.size
    timed([a.poreforge, "generate", "blobs", "--shape", f"{n},{n},{n}", "--porosity", "0.196", "--seed", "1",
           "--blobiness", "1", "-o", recon])
    report = os.path.join(work, "report.json")
    compare_s, _ = timed([a.poreforge, "compare", recon, "--reference", a.reference, "--subvolumes", "12",
                          "--backend", a.backend, "--permeability", a.permeability, "-o", report])
    compare = json.load(open(report))
    record = {
        "benchmark": "compare",
        "backend": a.backend,
        "device": compare.get("device", ""),
        "version": compare.get("version", ""),
        "reconstruction": f"blobs {n}^3, porosity 0.196",
        "reference": a.reference,
        "subvolumes": len(compare["subvolume_corners"]),
        "permeability": a.permeability == "on",
        "compare_seconds": compare_s,
        "measures": compare["measures"],
        "outside": compare["outside"],
        "typical_real_outside": compare["typical_real_outside"],
    }
    lines = [f"poreforge compare, backend {a.backend} ({record['device']}): blobs {n}^3 against 12 sub-volumes of "
             f"{a.reference}, permeability {a.permeability}",
             f"  wall time of the whole command: {compare_s:.1f} s "
             f"({compare['measures']} measures; the blobs are outside on {compare['outside']}, "
             f"a real sub-volume on {compare['typical_real_outside']:g})"]
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
