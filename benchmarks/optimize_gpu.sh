#!/usr/bin/env bash
# Issue 28's small real `controller optimize` on the H200: profile and capture the pi0.5-size
# example, tune the operators named (autotune, BUDGET minutes in all), install what promoted,
# verify the model (numerics; time against none, stock and each kernel left out), keep or drop
# each kernel, and install the kept ones into $WORK/tuned/<profile>. The batch lives in WORK
# (default /tmp/optimize-work, outside $OUT: a device call returns few files); a second call on
# the same warm machine resumes it. Reports (report.md/json, plan, verify, hotspots, a tarball
# of the batch without its tune runs) land in $OUT.
# Usage, from the repository root on the GPU machine (about 6 minutes):
#   OUT=$OUT bash benchmarks/optimize_gpu.sh rms_norm
# Knobs: BUDGET (3 minutes of tuning), FENCE ("--fence landlock"; "--unfenced" where Landlock
# cannot start), AGENT (autotune; e.g. scripted:kernels/sessions/tune_split_kv_attention.json
# for the session carrying a hand-written kernel, with ATTEMPTS its attempt count), PROFILE (optimized), ATTEMPTS (4), PATIENCE (2), SIZE (pi05) and DEVICE (cuda):
# DEVICE=cpu SIZE=tiny checks the script itself on a machine without a GPU.
# The ruff gate of the tune runs needs ruff: carry its wheel in .whl/ (docs/benchmarks.md).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/optimize-gpu}
WORK=${WORK:-/tmp/optimize-work}
BUDGET=${BUDGET:-3}
FENCE=${FENCE:---fence landlock}
PROFILE=${PROFILE:-optimized}
ATTEMPTS=${ATTEMPTS:-4}
PATIENCE=${PATIENCE:-2}
SIZE=${SIZE:-pi05}
DEVICE=${DEVICE:-cuda}
AGENT=${AGENT:-autotune}
PREFLIGHT=${PREFLIGHT:-1}  # 0: --no-preflight (a production kernel outside its contract on a hidden draw)
source benchmarks/device_env.sh
record_versions "$OUT/versions.txt"
operators=("$@")
[ ${#operators[@]} -gt 0 ] || operators=(rms_norm)
target="$WORK/target"  # supplies BASE and the ruff settings: a one-commit scratch repository
if [ ! -d "$target/.git" ]; then
  mkdir -p "$target" && cp pyproject.toml "$target/"
  git -C "$target" init -q -b main && git -C "$target" add -A &&
    git -C "$target" -c user.name=opt -c user.email=opt@localhost commit -qm target
fi
batch=$(ls -d "$WORK"/runs/optimize-* 2>/dev/null | head -n 1)
if [ -n "$batch" ]; then
  run optimize_resume 560 python3 -m controller optimize --resume "$batch"
else
  # shellcheck disable=SC2086  # FENCE holds one or two words on purpose
  run optimize 560 python3 -m controller optimize --profile "$PROFILE" \
    --operators "${operators[@]}" --budget-minutes "$BUDGET" --agent "$AGENT" --device "$DEVICE" --size "$SIZE" $FENCE \
    --max-attempts "$ATTEMPTS" --patience "$PATIENCE" --target "$target" \
    $([ "$PREFLIGHT" = 0 ] && echo --no-preflight) \
    --tuned-root "$WORK/tuned" --runs-dir "$WORK/runs" \
    -- controller.profiling.example_driver:forward "$SIZE" 1
fi
batch=$(ls -d "$WORK"/runs/optimize-* 2>/dev/null | head -n 1)
[ -n "$batch" ] || exit 1
cp "$batch/evidence/report.md" "$batch/evidence/report.json" "$OUT/" 2>/dev/null
cp "$batch/plan.json" "$batch/verify.json" "$batch/profile/hotspots.md" "$OUT/" 2>/dev/null
tar -czf "$OUT/batch.tgz" -C "$(dirname "$batch")" --exclude='*/tune/*/batch-*/runs' \
  "$(basename "$batch")" "$WORK/tuned" 2>/dev/null
cat "$OUT/report.md" 2>/dev/null
