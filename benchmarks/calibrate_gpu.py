"""`controller calibrate` on the pi0.5-size example's capture, timed per operator.

Run from the repository root on a GPU machine: `OUT=$OUT python3 benchmarks/calibrate_gpu.py`
(about two to three minutes: the capture, then the calibration, whose goal is under two
minutes for every operator). It captures one forward pass of the example at batch 1
(`capture-ops`, in a subprocess), calibrates each captured operator in turn against its FP64
reference on the GPU, then measures the production kernel again on two other draws of every
layout and says whether each stays within the tolerance just calibrated (it must). Writes
$OUT/calibrate_gpu.json (seconds per operator, every output's figures) and prints a table.
`--size tiny --device cpu` runs the same code on a CPU under the Triton interpreter.

Its answer: docs/benchmarks.md, "The tune flow".
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

import torch  # noqa: E402

from gates.calibration.capture_calibration import calibrate_capture  # noqa: E402
from gates.calibration.contract_file import DEFAULT_MARGIN  # noqa: E402
from gates.calibration.measure import call_params, input_sets  # noqa: E402
from gates.tasks.captured import captured_operators  # noqa: E402
from operators import REGISTRY  # noqa: E402
from operators.accuracy import AccuracyCheck  # noqa: E402
from operators.call_capture import load_capture  # noqa: E402
from operators.declaration import as_outputs  # noqa: E402

RECHECK_SEEDS = (101, 102)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="pi05")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--capture", type=Path, help="an existing capture (skips capturing)")
    arguments = parser.parse_args()
    out = Path(os.environ.get("OUT", "/tmp/calibrate-gpu"))
    out.mkdir(parents=True, exist_ok=True)
    folder, capture_seconds = arguments.capture, None
    if folder is None:
        folder = out / f"capture-{arguments.size}-b1"
        started = time.perf_counter()
        driver = ["controller.profiling.example_driver:forward", arguments.size, "1"]
        command = [sys.executable, "-m", "controller", "capture-ops", "--output", str(folder)]
        subprocess.run([*command, "--steps", "1", "--", *driver], check=True, cwd=REPOSITORY)
        capture_seconds = time.perf_counter() - started
    device = torch.device(arguments.device)
    rows = []
    for name in captured_operators(folder):
        started = time.perf_counter()
        calibration = calibrate_capture(folder, [name], DEFAULT_MARGIN, device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        operator = calibration.operators[name]
        rows.append(
            {
                "operator": name,
                "seconds": seconds,
                "layouts": len(operator.measured_on.layouts),
                "outputs": [output.model_dump() for output in operator.outputs],
                "recheck_within": _recheck(folder, name, operator, device),
            }
        )
        print(_line(rows[-1]), flush=True)
    total = sum(row["seconds"] for row in rows)
    report = {
        "size": arguments.size,
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "capture_seconds": capture_seconds,
        "calibration_seconds": total,
        "goal_seconds": 120,
        "operators": rows,
    }
    (out / "calibrate_gpu.json").write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"calibrated {len(rows)} operators in {total:.1f} s (goal < 120 s); capture took "
        f"{capture_seconds if capture_seconds is None else round(capture_seconds, 1)} s"
    )
    return 0 if all(row["recheck_within"] for row in rows) else 1


def _recheck(folder: Path, name: str, operator, device) -> bool:
    """The production kernel on other draws of every layout keeps the contract."""
    declaration = REGISTRY.declaration(name)
    kernel = declaration.preferred or declaration.reference
    for layout in [item for item in load_capture(folder).layouts if item.operator == name]:
        params = call_params(declaration, layout)
        for inputs in input_sets(declaration, folder, layout, RECHECK_SEEDS, device)[1:]:
            with torch.no_grad():
                outputs = list(as_outputs(kernel(*inputs, **params)))
            violation = AccuracyCheck.on_inputs(declaration, inputs, params).violation(outputs)
            if violation is not None:
                print(f"  {name} {layout.key}: {violation.describe()}")
                return False
    return True


def _line(row: dict) -> str:
    figures = ", ".join(
        f"{o['output']} {o['baseline_error']:.3g}->{o['tolerance']:.3g}" for o in row["outputs"]
    )
    within = "ok" if row["recheck_within"] else "RECHECK FAILED"
    seconds = f"{row['seconds']:6.1f} s"
    return f"{row['operator']:<24} {seconds}  {row['layouts']} layouts  {figures}  {within}"


if __name__ == "__main__":
    sys.exit(main())
