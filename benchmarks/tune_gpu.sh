#!/usr/bin/env bash
# Issue 14's H200 measurement in one script: `controller tune run` (autotune, Landlock unless
# FENCE says otherwise) for each operator named, then production vs tuned vs torch.compile as
# CUDA-graph per-call times. Everything lands under $OUT.
# Usage, from the repository root on the GPU machine; two operators per call keep each call
# under about 7 minutes (an H200 evaluation takes about 25 s):
#   OUT=$OUT bash benchmarks/tune_gpu.sh rms_norm ada_rms_norm
#   OUT=$OUT bash benchmarks/tune_gpu.sh gated_residual gated_gelu
#   OUT=$OUT bash benchmarks/tune_gpu.sh rotate_qk split_kv_attention
# The ruff gate needs ruff: carry its wheel in .whl/ with pydantic's (docs/benchmarks.md).
# An operator with kernels/sessions/tune_<op>.json also gets a scripted run that
# submits that hand-written kernel, one attempt per attempt the session holds (a session may
# carry several tile tables); the comparison takes each operator's newest export.
# Knobs: ATTEMPTS (5), PATIENCE (3), MINUTES of tuning per operator (2), FENCE
# ("--fence landlock"; "--unfenced" where Landlock cannot start), DEVICE (cuda).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tune-gpu}
ATTEMPTS=${ATTEMPTS:-5}
PATIENCE=${PATIENCE:-3}
MINUTES=${MINUTES:-2}
FENCE=${FENCE:---fence landlock}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu checks the script itself on a machine without a GPU
source benchmarks/device_env.sh
operators=("$@")
[ ${#operators[@]} -gt 0 ] || operators=(rms_norm ada_rms_norm gated_residual gated_gelu rotate_qk split_kv_attention)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
for tool in "python3 -m ruff --version" "git --version"; do  # fail before any GPU time is spent
  if ! $tool >> "$OUT/tools.txt" 2>&1; then
    echo "tune_gpu: '$tool' fails here; the tune flow needs it (ruff gate, run folders)" >&2
    exit 2
  fi
done
# The target only supplies BASE and the ruff settings: a one-commit scratch repository.
target="$OUT/target"
if [ ! -d "$target/.git" ]; then
  mkdir -p "$target" && cp pyproject.toml "$target/"
  git -C "$target" init -q -b main && git -C "$target" add -A &&
    git -C "$target" -c user.name=tune -c user.email=tune@localhost commit -qm target
fi
keep_evidence() {  # keep_evidence NAME: status and evidence of the newest run
  local run
  run=$(ls -td "$OUT"/runs/tune-* 2>/dev/null | head -n 1)
  [ -n "$run" ] || return 0
  python3 -m controller status "$run" > "$OUT/status_$1.txt" 2>&1
  cat "$OUT/status_$1.txt"
  cp -r "$run/evidence" "$OUT/evidence_$1" 2>/dev/null
}
for op in "${operators[@]}"; do
  echo "=== tune $op"
  # shellcheck disable=SC2086  # FENCE holds one or two words on purpose
  timeout $((MINUTES * 60 + 120)) python3 -m controller tune run --operator "$op" \
    --device "$DEVICE" $FENCE --target "$target" --runs-dir "$OUT/runs" --max-attempts "$ATTEMPTS" \
    --patience "$PATIENCE" --max-minutes "$MINUTES" > "$OUT/tune_$op.log" 2>&1
  echo "=== tune $op exit $?"
  tail -n 5 "$OUT/tune_$op.log"
  keep_evidence "$op"
  session=kernels/sessions/tune_${op}.json
  if [ -f "$session" ]; then  # a hand-written kernel, judged by the same gates
    echo "=== tune $op (scripted: $session)"
    # shellcheck disable=SC2086
    timeout $((MINUTES * 60 + 120)) python3 -m controller tune run --operator "$op" \
      --device "$DEVICE" $FENCE --target "$target" --runs-dir "$OUT/runs" \
      --max-attempts "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["attempts"]))' "$session")" \
      --agent "scripted:$session" > "$OUT/tune_${op}_scripted.log" 2>&1
    echo "=== tune $op scripted exit $?"
    keep_evidence "${op}_scripted"
  fi
done
echo "=== compare"
timeout 300 python3 benchmarks/tune_compare.py --runs-dir "$OUT/runs" --out "$OUT" \
  --operators "${operators[@]}" 2>&1 | tee "$OUT/compare.log"
# Keep the records (journal, verdicts, evaluations, transcripts, incumbents, exports); drop the
# bulky copies: BASE, the task copies, each attempt's workspace, start tree and candidate.
find "$OUT/runs" -maxdepth 2 \( -name base -o -name prepared \) -exec rm -rf {} + 2>/dev/null
find "$OUT/runs" -mindepth 4 -maxdepth 4 -path '*/attempts/*' \( -name workspace -o \
  -name start -o -name 'candidate*' -o -name gates \) -exec rm -rf {} + 2>/dev/null
exit 0
