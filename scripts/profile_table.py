"""Nsight Compute CSV (one row per launch and metric) -> per-kernel table and launch order.

    python3 scripts/profile_table.py NCU_CSV

For each kernel: its launches and each metric's mean (durations also summed, in us); then
the launches in order with their durations (empty painter launches show as the short ones).
"""
import csv
import re
import sys


def short(name):
    name = re.sub(r"\(.*", "", name).replace("void ", "").replace("poreforge::", "")
    return name[:48]


def main(path):
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    if not rows:
        print("profile_table: no Nsight rows (did ncu run?)")
        return 1
    head = rows[0]
    col = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
    launches = {}  # ID -> (kernel, {metric: value})
    for r in rows[1:]:
        kernel, metric = short(r[col["Kernel Name"]]), r[col["Metric Name"]]
        try:
            value = float(r[col["Metric Value"]].replace(",", ""))
        except ValueError:
            continue
        launches.setdefault(r[col["ID"]], (kernel, {}))[1][metric] = value
    metrics = sorted({m for _, values in launches.values() for m in values})
    by_kernel = {}
    for kernel, values in launches.values():
        by_kernel.setdefault(kernel, []).append(values)
    duration = "gpu__time_duration.sum"
    print(f"{'kernel':48s} {'launches':>8s}" + "".join(f" {m[:34]:>34s}" for m in metrics)
          + (f" {'total us':>10s}" if duration in metrics else ""))
    for kernel, runs in by_kernel.items():
        means = []
        for m in metrics:
            got = [v[m] for v in runs if m in v]
            scale = 1e-3 if m == duration else 1.0  # ns -> us
            means.append(sum(got) / len(got) * scale if got else float("nan"))
        line = f"{kernel:48s} {len(runs):8d}" + "".join(f" {x:34.3f}" for x in means)
        if duration in metrics:
            line += f" {sum(v.get(duration, 0) for v in runs) * 1e-3:10.1f}"
        print(line)
    if duration in metrics:
        order = sorted(launches.items(), key=lambda kv: int(kv[0]))
        print("launches in order (us):")
        print(" ".join(f"{k.split('<')[0].replace('kernels::', '')}={v.get(duration, 0) * 1e-3:.1f}"
                       for _, (k, v) in order[:120]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
