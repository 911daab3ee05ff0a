#!/usr/bin/env bash
# usage: plots.sh POREFORGE SCRIPTS_DIR — a tiny run and a two-run sweep, then both plot
# scripts; fails unless every PNG exists and starts with the PNG signature.
set -euo pipefail
poreforge=$1 scripts=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$poreforge" generate blobs --shape 24,24,24 --seed 3 -o ref.h5 > /dev/null
cat > run.yaml <<YAML
name: tiny
backend: cpu
target: {image: ref.h5, phase: 1}
descriptors: {bins: 6}
domain: {shape: [12, 12, 12]}
annealing: {trial_moves: 10, max_evaluations: 200, stage_length: 50}
output: {directory: results, report_every: 50}
YAML
"$poreforge" run run.yaml --quiet > /dev/null
cat > sweep.yaml <<YAML
name: sw
base: run.yaml
output: results
grid: {seed: [1, 2]}
YAML
"$poreforge" sweep sweep.yaml > /dev/null
"$scripts/plot_run.py" results/tiny
"$scripts/plot_sweep.py" results/sw
for png in results/tiny/plots/{energy,psd,s2,slices}.png results/sw/summary.png; do
  [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || { echo "not a PNG: $png"; exit 1; }
done
echo "plots ok"
