#!/usr/bin/env bash
# One device call of several measurements, chosen by name, each logged under $OUT/NAME.log.
# At the end the reports under $OUT are packed into $OUT/results.tgz (a device call returns at
# most 8 files); a second invocation in the same call keeps the first's as results-1.tgz.
# Usage on the GPU machine, from the repository root:
#   OUT=$OUT bash benchmarks/device_call.sh evaluator profile example ...
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/device-call}
source benchmarks/device_env.sh
record_versions "$OUT/versions.txt"

verify_and_pack() {  # verify_and_pack PROFILE: verify tuned/PROFILE (numerics, and the model's
  # time against none and stock), then pack it with the verified.json verify wrote
  run "verify_$1" "${VERIFY_SECONDS:-300}" python3 -m controller verify --profile "$1" \
    --inputs 2 --output "$OUT/verify-$1.json" ${VERIFY_FLAGS:-}  # VERIFY_FLAGS=--unfenced
  tar czf "$OUT/tuned-$1.tgz" "tuned/$1"
}

make_target() {  # a git repository at $OUT/target holding only pyproject.toml, for tune runs
  target="$OUT/target"; mkdir -p "$target" && cp pyproject.toml "$target/" \
    && git -C "$target" init -q -b main && git -C "$target" add -A \
    && git -C "$target" -c user.name=tune -c user.email=tune@localhost commit -qm target
}

tune_and_install() {  # tune_and_install PROFILE SECONDS OP...: each OP tuned by its scripted
  # session (kernels/sessions/tune_OP.json) under every gate against $target (with the task
  # $OUT/tasks/OP when TASKS_FROM_CAPTURE=1), then installed into tuned/PROFILE
  local profile=$1 seconds=$2; shift 2
  for op in "$@"; do
    task=(); [ "${TASKS_FROM_CAPTURE:-0}" = 1 ] && task=(--task "$OUT/tasks/$op")
    run "tune_$op" "$seconds" python3 -m controller tune run --operator "$op" \
      "${task[@]}" --device cuda ${FENCE:---fence landlock} --target "$target" \
      --runs-dir "$OUT/runs/$op" \
      --max-attempts "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["attempts"]))' "kernels/sessions/tune_$op.json")" \
      --agent "scripted:kernels/sessions/tune_$op.json"
    for run_dir in "$OUT/runs/$op"/tune-*; do
      python3 -m controller status "$run_dir" > "$OUT/status_$op.txt" 2>&1
      [ -d "$run_dir/export" ] && python3 -m controller install "$run_dir/export" \
        --profile "$profile" --replace >> "$OUT/install.log" 2>&1
    done
    tail -n 3 "$OUT/status_$op.txt" "$OUT/install.log" 2>/dev/null
  done
}

gpu_profile() {  # the profile this GPU's runs publish: h200_seeded on an H200, else h100
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)" in
    *H200*) echo h200_seeded ;;
    *) echo h100 ;;
  esac
}

for part in "$@"; do
  case $part in
    evaluator3) run evaluator3 200 python3 benchmarks/evaluator_gpu.py --repeats 3 --no-cheats
                cp "$OUT/evaluator_gpu.json" "$OUT/evaluator3.json" 2>/dev/null ;;
    fenced3) run fenced3 200 python3 benchmarks/evaluator_gpu.py --repeats 3 --no-cheats --fence landlock
             cp "$OUT/evaluator_gpu.json" "$OUT/fenced3.json" 2>/dev/null ;;
    evaluator20) run evaluator20 "${EVAL_SECONDS:-420}" python3 benchmarks/evaluator_gpu.py --repeats 20 ;;
    profile)
      for b in 1 8; do
        run profile_b$b 150 python3 -m controller profile --output "$OUT/profile-pi05-b$b" \
          --warmup 2 --steps 3 -- controller.profiling.example_driver:forward pi05 $b
      done ;;
    tuned_profile)  # what remains: the forward per batch under this GPU's tuned profile
      # (TUNED_PROFILE, default h100, h200_seeded on an H200), one CUDA graph, by region
      tuned=${TUNED_PROFILE:-$(gpu_profile)}
      for b in ${BATCHES:-8}; do
        run "tuned_profile_b$b" 200 python3 -m controller profile --graph \
          --kernel-profile "$tuned" --output "$OUT/tuned-profile-$tuned-b$b" --warmup 2 \
          --steps 3 -- controller.profiling.example_driver:forward pi05 "$b"
      done ;;
    capture) run capture 150 python3 -m controller capture-ops --output "$OUT/capture-pi05-b1" \
          --steps 1 -- controller.profiling.example_driver:forward pi05 1 ;;
    example) run example 300 python3 -m controller example run --size pi05 --time \
          --mode eager --mode graph --mode compile --output "$OUT/example-time.json" ;;
    captured)  # issue 16's chain: capture, tune-all --captured, install, the example end to end
      make_target
      run capture 150 python3 -m controller capture-ops --output "$OUT/capture-pi05-b1" \
        --steps 1 -- controller.profiling.example_driver:forward pi05 1
      run tune_all "${TUNE_SECONDS:-330}" python3 -m controller tune-all \
        --captured "$OUT/capture-pi05-b1" ${CAPTURED_OPS:-} --device cuda --max-attempts 2 \
        --patience 1 --no-preflight --target "$target" --runs-dir "$OUT/runs"
      for export in "$OUT"/runs/batch-*/runs/*/tune-*/export; do
        [ -d "$export" ] && python3 -m controller install "$export" --profile captured-pi05-b1 \
          >> "$OUT/install.log" 2>&1
      done
      cat "$OUT/install.log" 2>/dev/null | tail -n 8
      profiles="--profile none --profile torch"
      [ -f tuned/captured-pi05-b1/profile.json ] && profiles="$profiles --profile captured-pi05-b1"
      run example_captured 240 python3 -m controller example run --size pi05 --batch 1 --time \
        $profiles --mode graph --mode compile --iterations 10 --warmup 2 \
        --output "$OUT/example-time-captured-b1.json" ;;
    speed)  # issue 26: the model under stock, none and h200 (when installed), per batch;
      # SPEED_PROFILES replaces stock and none (e.g. "--profile stock --profile torch ...")
      profiles=${SPEED_PROFILES:-"--profile stock --profile none"}
      [ -f tuned/h200/profile.json ] && profiles="$profiles --profile h200"
      for b in ${BATCHES:-1 8}; do
        run speed_b$b "${SPEED_SECONDS:-300}" python3 -m controller example run --size pi05 \
          --batch "$b" --time $profiles ${SPEED_MODES:---mode graph --mode reduce-overhead} \
          --iterations 20 --warmup 3 --output "$OUT/speed-b$b.json"
      done ;;
    h200)  # issue 26: the h200 profile through the project's own flow. Each operator named in
      # H200_OPS is tuned by a scripted session carrying its hand-written kernel
      # (kernels/sessions/tune_<op>.json), judged by every gate under Landlock, installed
      # with `controller install`, then the profile is verified (numerics and the model's time
      # against none and stock) and packed into $OUT/tuned-h200.tgz. With H200_CALIBRATED=1
      # (issue 30) the tasks come from a capture of batches 1 and 8, calibrated in FP64:
      # `generate --captured` packages each operator with its calibrated contract.
      make_target
      if [ "${H200_CALIBRATED:-0}" = 1 ]; then
        run capture_b1_b8 200 python3 -m controller capture-ops --output "$OUT/capture-pi05" \
          --steps 1 -- controller.profiling.example_driver:forward_batches pi05 1,8
        run calibrate 150 python3 -m controller calibrate "$OUT/capture-pi05"  # all operators
        run generate 60 python3 -m controller generate --captured "$OUT/capture-pi05" \
          --output "$OUT/tasks" ${H200_OPS:-}
      fi
      TASKS_FROM_CAPTURE=${H200_CALIBRATED:-0} tune_and_install h200 "${TUNE_SECONDS:-240}" ${H200_OPS:-}
      [ -f tuned/h200/profile.json ] && verify_and_pack h200 ;;
    tune_install)  # each of TUNE_OPS tuned by its kernel template's scripted session through
      # every gate, installed into TUNE_PROFILE (default h100_plain) in place of what it held,
      # then the profile verified and timed against stock and `none` per batch
      make_target
      tune_and_install "${TUNE_PROFILE:-h100_plain}" "${TUNE_SECONDS:-150}" \
        ${TUNE_OPS:?TUNE_OPS names the operators}
      verify_and_pack "${TUNE_PROFILE:-h100_plain}" ;;
    baselines)  # issue 44: every catalog operator's own baseline judged on this GPU (preflight)
      for op in ${BASELINE_OPS:-split_kv_attention stacked_projection qkv_projection attention_output gated_gelu_projection rotate_qk}; do
        python3 -m controller generate "$op" --output "$OUT/tasks" > /dev/null 2>&1
        TAIL=0 run "baseline_$op" 200 python3 -m controller evaluate "$OUT/tasks/$op" \
          --solution "$OUT/tasks/$op/solution" --device cuda --json
        python3 -c 'import json, sys; d = json.loads(open(sys.argv[1]).read()[open(sys.argv[1]).read().index("{"):]); print(sys.argv[2], d["status"], d.get("integrity"), d["reason"][:400], d.get("library_calls", [])[:2])' "$OUT/baseline_$op.log" "$op"
      done ;;
    optimize)  # issue 44: one `controller optimize` on this GPU seeded from SEED_PROFILE (h200),
      # publishing OPT_PROFILE (h100); its batch lives in .device-runs/. When the call ends before
      # the batch does, `controller pack` leaves it (without its captured inputs) in
      # $OUT/optimize-batch.tgz, and the target repository in $OUT/optimize-target.tgz; a later
      # device call that carries both in .device-carry/ unpacks them and resumes the batch.
      # Without a carried batch a new one starts (a warm machine's earlier batch folder is
      # removed: its results went back with that call). OPT_PROFILE defaults to h100, or
      # h200_seeded on an H200; SEED_PROFILE=none runs the plain model-free optimize (kernel
      # templates, no seed). OPT_DRIVER replaces the driver:
      # `controller.profiling.example_driver:forward_batches pi05 1,8` captures both batches,
      # so a kernel can own batch-8 layouts too
      target=.device-target
      echo "repository root: $PWD"
      OPT_PROFILE=${OPT_PROFILE:-$(gpu_profile)}  # on an H200, tuned/h200 is the seed
      if ls .device-carry/optimize-batch.tgz.part-* >/dev/null 2>&1; then
        cat .device-carry/optimize-batch.tgz.part-* > .device-carry/optimize-batch.tgz
      fi
      rm -rf .device-runs && mkdir -p .device-runs
      if [ -f .device-carry/optimize-batch.tgz ]; then
        tar xzf .device-carry/optimize-batch.tgz -C .device-runs
        rm -rf "$target" && tar xzf .device-carry/optimize-target.tgz
        echo "carried batch: $(ls -d .device-runs/optimize-*)"
      else
        rm -rf "$target"
      fi
      seed=(--seed-profile "${SEED_PROFILE:-h200}")
      [ "${SEED_PROFILE:-h200}" = none ] && seed=()
      if [ ! -d "$target/.git" ]; then
        mkdir -p "$target" && cp pyproject.toml "$target/" && git -C "$target" init -q -b main \
          && git -C "$target" add -A \
          && git -C "$target" -c user.name=tune -c user.email=tune@localhost commit -qm target
      fi
      found=$(ls -d .device-runs/optimize-* 2>/dev/null | tail -n 1)
      if [ -n "$found" ]; then
        arguments=(--resume "$found" --runs-dir .device-runs)
      else
        arguments=(--profile "$OPT_PROFILE" "${seed[@]}"
          --budget-minutes "${OPT_MINUTES:-6}" --device cuda --size pi05 --fence landlock
          --batch 1 --batch 8 --target "$target" --runs-dir .device-runs
          --max-attempts "${OPT_ATTEMPTS:-2}" ${OPT_FLAGS:-} -- ${OPT_DRIVER:-controller.profiling.example_driver:forward pi05 1})
      fi
      TAIL=60 run optimize "${OPT_SECONDS:-540}" python3 -m controller optimize "${arguments[@]}"
      for folder in .device-runs/optimize-*; do
        cp "$folder/evidence/report.md" "$OUT/optimize-report.md" 2>/dev/null
        cp "$folder/plan.json" "$OUT/optimize-plan.json" 2>/dev/null
        cp "$folder/profile/hotspots.md" "$OUT/optimize-hotspots.md" 2>/dev/null
      done
      if [ -f "tuned/$OPT_PROFILE/profile.json" ]; then
        tar czf "$OUT/tuned-$OPT_PROFILE.tgz" "tuned/$OPT_PROFILE"
      fi
      found=$(ls -d .device-runs/optimize-* 2>/dev/null | tail -n 1)
      if [ -n "$found" ] && ! grep -q '"state": *"finished"' "$found/state.json"; then
        python3 -m controller pack "$found" "$OUT/optimize-batch.tgz" && tar czf "$OUT/optimize-target.tgz" "$target"
        if [ "$(stat -c %s "$OUT/optimize-batch.tgz" 2>/dev/null || echo 0)" -gt 15000000 ]; then
          split -b 15000000 -d "$OUT/optimize-batch.tgz" "$OUT/optimize-batch.tgz.part-"  # 16 MB a file comes back
          rm "$OUT/optimize-batch.tgz"
        fi
      fi
      mkdir -p "$OUT/optimize-runs" && (cd .device-runs && find . \( -name "*.json" -o -name "*.md" \
        -o -name "*.txt" -o -name "*.jsonl" -o -name "*.log" \) -size -900k ! -path "*/fixtures/*" \
        ! -path "*/workspace/*" -print0 | tar cf - --null -T - | tar xf - -C "$OUT/optimize-runs") ;;
    verify) verify_and_pack h200 ;;  # the profile as it is in the tree (it loads once verified)
    kernels)  # where the forward's device time goes, by kernel, for each PROFILE:MODE
      for spec in ${KERNEL_SPECS:-stock:reduce-overhead none:graph}; do
        for b in ${BATCHES:-1 8}; do
          run "kernels_${spec%%:*}_b$b" 240 python3 benchmarks/model_kernels.py \
            --profile "${spec%%:*}" --mode "${spec##*:}" --batch "$b"
        done
      done ;;
    gemm) run gemm "${GEMM_SECONDS:-150}" python3 benchmarks/gemm_probe.py ;;  # issue 26: Triton products at 400 rows against cuBLAS
    projection)  # issue 26: the modulation kernel's settings, the fastest written into it and its
      # session (then `h200` with H200_OPS=stacked_projection ships them)
      run projection 120 python3 benchmarks/projection_gpu.py --write ;;
    margin) run margin "${MARGIN_SECONDS:-200}" python3 benchmarks/attention_margin.py ;;  # issue 26: contract margins
    attention_tuning)  # the sweep's fastest variant per regime into the kernel and its session,
      # among the numerics that passed every margin case when `margin` ran before
      margins=(); [ -f "$OUT/attention_margin.json" ] && margins=(--margins "$OUT/attention_margin.json")
      run attention_tuning 30 python3 kernels/attention_session.py \
        --tuning-from "$OUT/attention_gpu.json" "${margins[@]}"
      for kernel in kernels/split_kv_attention_split_dim*.py; do cp "$kernel" "$OUT/$(basename "$kernel").txt"; done ;;
    attention) run attention "${ATTENTION_SECONDS:-420}" python3 benchmarks/attention_gpu.py ;;  # issue 26: split-dim kernel
    gated) run gated 200 python3 benchmarks/gated_projection_gpu.py ;;  # issue 26: MLP gate/up
    tiles)  # issue 26: for each operator in TILE_OPS (default attention_output), its fused
      # kernel's tiles per regime, the fastest written into the kernel and its scripted session
      # (then `h200` with the same H200_OPS ships them); the written kernels come back as .txt;
      # TILE_WORKLOADS (comma-separated) sweeps only those workloads' regimes; TILE_MODULE
      # sweeps another kernel module of the operator, TILE_INCUMBENT times one beside the tiles;
      # TILE_RUN_SECONDS bounds each operator's sweep (default 260); TILE_WRITE=0 only times
      for op in ${TILE_OPS:-attention_output}; do
        write=(--write); [ "${TILE_WRITE:-1}" = 0 ] && write=()
        run "tiles_$op" "${TILE_RUN_SECONDS:-260}" python3 benchmarks/tile_sweep.py "$op" "${write[@]}" \
          ${TILE_WORKLOADS:+--workloads "$TILE_WORKLOADS"} ${TILE_MODULE:+--module "$TILE_MODULE"} \
          ${TILE_INCUMBENT:+--incumbent "$TILE_INCUMBENT"}
      done ;;
    space)  # issue 27: the exhaustive sweep of SPACE_OPS' declared spaces against autotune's
      # screen; SPACE_SHARD=K/N sweeps one shard (merge them here with `--merge N`)
      run "space${SPACE_SHARD:+_${SPACE_SHARD%%/*}}" "${SPACE_SECONDS:-580}" python3 \
        benchmarks/sweep_space.py --operators "${SPACE_OPS:-split_kv_attention}" \
        ${SPACE_SHARD:+--shard "$SPACE_SHARD"} --sweep-budget-s "${SPACE_SWEEP_S:-280}" ;;
    inductor)  # issue 26: Inductor's code for rotate_qk's reference at prefix_b8 (dynamic=False)
      TORCH_LOGS=output_code run inductor_rotate_qk 150 python3 -c "
import torch
from operators import REGISTRY
declaration = REGISTRY.declaration('rotate_qk')
workload = next(w for w in declaration.workloads if w.name == 'prefix_b8')
inputs = declaration.make_inputs(workload, 0, 'normal', 'cuda')
torch.compile(declaration.reference, dynamic=False)(*inputs)
torch.cuda.synchronize()" ;;
    leaveout) run leave_one_out "${LEAVEOUT_SECONDS:-300}" python3 benchmarks/leave_one_out.py \
      --profile "${LEAVEOUT_PROFILE:-h200}" --batches ${BATCHES:-1 8} \
      ${LEAVEOUT_OPS:+--operators $LEAVEOUT_OPS} ;;  # which installed kernels pay (LEAVEOUT_OPS: only these)
    gtprofile) TAIL=${TAIL:-90} run gtprofile 200 python3 benchmarks/graph_timing_profile.py ;;
    gputests) run gputests "${TESTS_SECONDS:-170}" python3 -m pytest -q -p no:cacheprovider -m gpu tests/evaluator tests/capture/test_profile_gpu.py ;;
    pdltests) run pdltests 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/evaluator/test_evaluator_gpu.py -k "early_reader or awaited" ;;
    *) echo "unknown part $part" ;;
  esac
done
# One archive back: reports only (logs, JSON, Markdown, charts, each under 2 MB); fixtures,
# run checkouts and caches stay behind (a device call returns at most 16 MB a file). An archive
# an earlier invocation in the same device call left is kept as results-N.tgz, not swept away.
(cd "$OUT" && kept=$(find . -maxdepth 1 -name 'results*.tgz' | wc -l) \
  && { [ ! -f results.tgz ] || mv results.tgz "results-$kept.tgz"; } \
  && find . -type f \( -name '*.log' -o -name '*.json' -o -name '*.md' -o -name '*.png' \
  -o -name '*.svg' -o -name '*.txt' -o -name 'tuned-*.tgz' \) -size -2M -print0 | tar czf /tmp/results.tgz --null -T - \
  && find . -mindepth 1 -maxdepth 1 ! -name 'results*.tgz' ! -name 'optimize-batch.tgz*' \
  ! -name 'optimize-target.tgz' -exec rm -rf {} + && mv /tmp/results.tgz .)
