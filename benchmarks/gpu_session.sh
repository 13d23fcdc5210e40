#!/usr/bin/env bash
# Every GPU check and benchmark of the project in one or two device calls, logs under $OUT.
#   part 1: catalog kernels, the example model at pi0.5 size
#   part 2: fences with a GPU, the evaluator benchmark and the GPU-marked tests
# Usage on the GPU machine, from the repository root: bash benchmarks/gpu_session.sh 1|2
set -u
cd "$(dirname "$0")/.."
part=${1:-1}
OUT=${OUT:-/tmp/gpu-session}
source benchmarks/device_env.sh
record_versions "$OUT/versions_$part.txt"

if [ "$part" = 1 ]; then
  run catalog 240 python3 benchmarks/catalog_gpu.py
  run example_pi05_b1 120 python3 -m controller example run --size pi05 --batch 1
  run example_pi05_b8 120 python3 -m controller example run --size pi05 --batch 8
else
  run fences 60 python3 benchmarks/fence_startup.py --runs 30 --fences landlock,none --gpu-check
  run evaluator 330 python3 benchmarks/evaluator_gpu.py
  run pytest_gpu 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/evaluator tests/examples
fi
