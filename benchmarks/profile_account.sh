#!/usr/bin/env bash
# controller profile's step account of the pi05 example on the GPU: eager, then one replayed
# CUDA graph (--graph), each profile's account of a step against the same step timed without
# the profiler. Reports under $OUT/profile-{eager,graph}-bBATCH/ (hotspots.json, hotspots.md).
# SIZE (pi05) picks the example size. Usage on the GPU machine, from the repository root:
#   OUT=$OUT bash benchmarks/profile_account.sh [BATCH] [MODES...]   (defaults: 1, eager graph)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/profile-account}
source benchmarks/device_env.sh
record_versions "$OUT/versions.txt"
batch=${1:-1}
shift || true
modes=${*:-eager graph}
for mode in $modes; do
  flag=""
  [ "$mode" = graph ] && flag="--graph"
  run "profile_${mode}_b$batch" 170 python3 -m controller profile $flag \
    --output "$OUT/profile-$mode-b$batch" --warmup 2 --steps 3 --timed-steps 20 \
    -- controller.profiling.example_driver:forward "${SIZE:-pi05}" "$batch"
done
