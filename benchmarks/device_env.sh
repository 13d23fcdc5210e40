# Sourced by the GPU scripts (device_call.sh, gpu_session.sh, tune_gpu.sh) from the repository
# root: the GPU image lacks pydantic (and ruff), so carried wheels in .whl/ are installed beside
# the repo (docs/benchmarks.md says which); then helpers to record versions and run one part.
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi

record_versions() {  # record_versions FILE: date, GPU, driver, Python, torch and Triton
  {
    date -u +%Y-%m-%dT%H:%MZ
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  } | tee "$1"
}

run() {  # run NAME SECONDS CMD...: output to $OUT/NAME.log, never stop the script
  local name=$1 seconds=$2; shift 2
  local started=$SECONDS
  echo "=== $name: $*"
  timeout "$seconds" "$@" > "$OUT/$name.log" 2>&1
  echo "=== $name exit $? after $((SECONDS - started)) s"
  tail -n "${TAIL:-40}" "$OUT/$name.log"
}
