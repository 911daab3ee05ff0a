"""scripts/profile_table.py on a small Nsight Compute CSV of the shape ncu --csv writes: one
row per launch and metric, several metrics, numbers with thousands separators."""
import csv
import subprocess
import sys
import tempfile

script = sys.argv[1]
head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
paint = "void poreforge::cuda::kernels::paint_band_marking<poreforge::detail::VoxelMetric>(int, const unsigned int *)"
count = "void poreforge::cuda::kernels::count_classes<poreforge::detail::VoxelMetric>(const unsigned int *)"
launches = [(paint, "512,000", "80"), (count, "9,400,000", "60"), (paint, "3,500", "0")]
rows = [head]
for i, (kernel, ns, hit) in enumerate(launches):
    for metric, unit, value in (("gpu__time_duration.sum", "nsecond", ns), ("lts__t_sector_hit_rate.pct", "%", hit)):
        rows.append([str(i), "1", "bench", "host", kernel, "1", "13", "(256, 1, 1)", "(660, 1, 1)", "0", "9.0", "",
                     metric, unit, value])
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    csv.writer(f).writerows(rows)
out = subprocess.run([sys.executable, script, f.name], capture_output=True, text=True, check=True).stdout
lines = out.splitlines()
paint_line = next(l for l in lines if "paint_band_marking" in l and "=" not in l)
fields = paint_line.split()
assert fields[1] == "2", paint_line                      # two launches
assert abs(float(fields[2]) - 257.75) < 1e-6, paint_line  # mean duration, us
assert abs(float(fields[3]) - 40.0) < 1e-6, paint_line    # mean hit rate
assert abs(float(fields[4]) - 515.5) < 1e-6, paint_line   # total, us
order = lines[-1].split()
assert [o.split("=")[1] for o in order] == ["512.0", "9400.0", "3.5"], lines[-1]

with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as empty:
    empty.write("==PROF== Disconnected\n")
failed = subprocess.run([sys.executable, script, empty.name], capture_output=True, text=True)
assert failed.returncode == 1 and "no Nsight rows" in failed.stdout, failed
print("profile_table: ok")
