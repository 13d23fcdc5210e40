"""`controller capture-ops`: record every registry call a driver makes, per argument layout."""

from pathlib import Path

from controller.profiling.driver import add_driver_argument


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "capture-ops",
        epilog=(
            "example: controller capture-ops --output runs/capture "
            "-- controller.profiling.example_driver:forward pi05 1"
        ),
        help="record the operator calls of an inference driver",
        description=(
            "Run DRIVER eagerly for --steps steps and record every registry call: operator, "
            "argument shapes, strides, dtypes, scalar parameters, aliasing, output layouts and "
            "call counts per layout, how many calls found their inputs just written by the op "
            "before (timed warm), with the first inputs of each layout as safetensors "
            "fixtures. `controller generate --captured DIR` turns it into task packages."
        ),
    )
    parser.add_argument("--output", type=Path, required=True, help="capture folder to write")
    parser.add_argument("--steps", type=int, default=1, help="measured driver steps (default 1)")
    add_driver_argument(parser)
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.errors import ControllerError
    from controller.profiling.driver import load_driver
    from operators.call_capture import CallCapture

    if arguments.steps < 1:
        raise ControllerError(f"--steps {arguments.steps}: give at least 1")
    step = load_driver(arguments.driver)
    capture = CallCapture()
    with capture.recording():
        for _ in range(arguments.steps):
            step()
    written = capture.write(
        arguments.output, arguments.driver[0], arguments.driver[1:], arguments.steps
    )
    for operator, count in sorted(written.counts_by_operator().items()):
        layouts = sum(1 for layout in written.layouts if layout.operator == operator)
        print(f"{operator}: {count} calls in {layouts} layouts")
    differing = [layout for layout in written.layouts if layout.production_layout_differs]
    for layout in differing:
        print(f"{layout.operator} {layout.key}: production kernel's output layout differs")
    print(f"capture: {arguments.output / 'capture.json'}")
    return 0
