"""`controller calibrate CAPTURE [--operators OP...]`: contracts measured against the FP64
reference on a capture's inputs, written as `calibration.json` beside the capture."""

from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        epilog="example: controller calibrate runs/capture",
        help="calibrate captured operators' contracts against their FP64 reference",
        description=(
            "Run each captured operator's Torch reference in FP64 on the capture's fixtures "
            "and on drawn inputs of the captured layouts, measure the production kernel's and "
            "the model-dtype reference's error against it per output, and write "
            "calibration.json beside the capture: tolerance = (1 + margin) x that error. "
            "`generate --captured` and `tune-all --captured` then judge candidates by it too."
        ),
    )
    parser.add_argument("capture", type=Path, metavar="CAPTURE", help="a capture-ops folder")
    parser.add_argument(
        "--operators", nargs="+", metavar="OP", help="operators to calibrate (default: all held)"
    )
    parser.add_argument(
        "--margin", type=float, default=None, help="allowed excess over the baseline (0.25)"
    )
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), help="where to measure (default: cuda if present)"
    )
    parser.set_defaults(func=run)


def run(arguments) -> int:
    import torch

    from controller.errors import ControllerError
    from gates.calibration.capture_calibration import calibrate_capture
    from gates.calibration.contract_file import CALIBRATION_FILE, DEFAULT_MARGIN
    from gates.tasks.captured import captured_operators
    from operators import triton_runtime

    names = captured_operators(arguments.capture, arguments.operators)
    if arguments.device == "cuda" and not triton_runtime.cuda_available():
        raise ControllerError(
            "--device cuda: no CUDA device here; calibrate on the GPU you tune on"
        )
    device = arguments.device or ("cuda" if triton_runtime.cuda_available() else "cpu")
    margin = DEFAULT_MARGIN if arguments.margin is None else arguments.margin
    calibration = calibrate_capture(arguments.capture, names, margin, torch.device(device))
    for name in names:
        for output in calibration.operators[name].outputs:
            print(
                f"{name}.{output.output}: baseline {output.baseline_error:.3g} "
                f"(production {output.production_error:.3g}, reference "
                f"{output.reference_error:.3g}) -> tolerance {output.tolerance:.3g}"
            )
    print(f"calibrated {len(names)} operators on {device}; {arguments.capture / CALIBRATION_FILE}")
    return 0
