"""`controller example run`: the example model under kernel profiles `none` and `torch`.

It shows in one screen that the production kernels keep the model's outputs within what the
operator contracts promise; with `--time` it measures the forward's end-to-end latency per
kernel profile and deployment mode (eager, one CUDA graph, torch.compile) and writes JSON.
"""

import datetime
import json
from pathlib import Path

EXIT_OUTSIDE_EXPECTATION = 1
MODES = ("eager", "graph", "compile", "reduce-overhead")
CUDA_MODES = ("graph", "reduce-overhead")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "example",
        help="run the bundled pi0.5-shaped example model",
        description="Run the bundled pi0.5-shaped example model.",
    )
    actions = parser.add_subparsers(dest="example_action", metavar="ACTION", required=True)
    run_parser = actions.add_parser(
        "run",
        help="compare outputs under kernel profiles none and torch",
        description=(
            "Run the example model under kernel_profile=none (production kernels) and "
            "kernel_profile=torch (references) and print each output's max difference "
            "against the expectation derived from the operator contracts."
        ),
    )
    run_parser.add_argument("--size", choices=("tiny", "pi05"), default="tiny")
    run_parser.add_argument("--batch", type=int, default=1, help="examples per forward pass")
    run_parser.add_argument("--seed", type=int, default=0, help="seed of weights and inputs")
    run_parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    run_parser.add_argument(
        "--time",
        action="store_true",
        help="time the forward per kernel profile and mode instead of comparing outputs",
    )
    run_parser.add_argument(
        "--mode",
        action="append",
        choices=MODES,
        help="with --time: eager, graph (one CUDA graph), compile, reduce-overhead "
        "(torch.compile with CUDA graphs); repeat for several (default: all this device runs)",
    )
    run_parser.add_argument(
        "--profile",
        action="append",
        help="with --time: a kernel profile to time (none, torch, stock, auto or an "
        "installed name); repeat for several (default: none, torch and stock; stock is what a "
        "PyTorch user deploys without this project, the references with SDPA attention)",
    )
    run_parser.add_argument("--iterations", type=int, default=20, help="timed forwards per row")
    run_parser.add_argument("--warmup", type=int, default=3, help="untimed forwards per row")
    run_parser.add_argument(
        "--output", type=Path, help="with --time: the JSON file (default: runs/example-time-*.json)"
    )
    run_parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.errors import ControllerError
    from examples.config import SIZES
    from examples.expectation import compare_profiles
    from operators import triton_runtime

    size = SIZES[arguments.size]
    if arguments.batch < 1:
        raise ControllerError(f"--batch {arguments.batch}: give at least 1")
    if size.needs_cuda and not triton_runtime.cuda_available():
        raise ControllerError(
            f"--size {size.name} needs a CUDA GPU and none is available; use --size tiny here"
        )
    device = triton_runtime.default_device()
    if arguments.time:
        return _time(arguments, size, device)
    comparisons = compare_profiles(size, arguments.batch, arguments.seed, device)
    all_within = all(comparison.within for comparison in comparisons)
    if arguments.json:
        print(
            json.dumps(
                {
                    "size": size.name,
                    "batch": arguments.batch,
                    "seed": arguments.seed,
                    "device": str(device),
                    "candidate": "none",
                    "reference": "torch",
                    "outputs": [comparison.model_dump() for comparison in comparisons],
                    "within_expectation": all_within,
                },
                indent=2,
            )
        )
    else:
        _print_table(size.name, arguments, device, comparisons, all_within)
    return 0 if all_within else EXIT_OUTSIDE_EXPECTATION


def _print_table(size_name, arguments, device, comparisons, all_within) -> None:
    where = "Triton interpreter" if device.type == "cpu" else str(device)
    print(
        f"example model {size_name}, batch {arguments.batch}, seed {arguments.seed} "
        f"({where}): kernel_profile none vs torch"
    )
    width = max(len(comparison.name) for comparison in comparisons)
    print(f"  {'output':<{width}}  {'max |none - torch|':>18}  {'expected <=':>11}  ok")
    for comparison in comparisons:
        bound = f"{comparison.bound:.3g}" if comparison.bound else "0 (exact)"
        mark = "yes" if comparison.within else "NO"
        print(
            f"  {comparison.name:<{width}}  {comparison.max_abs_difference:>18.3g}  "
            f"{bound:>11}  {mark}"
        )
    verdict = "within" if all_within else "OUTSIDE"
    print(f"all outputs {verdict} the expectation from the operator contracts")


def _time(arguments, size, device) -> int:
    from controller.errors import ControllerError
    from examples.timing import time_example

    if arguments.iterations < 1 or arguments.warmup < 0:
        raise ControllerError(
            f"--iterations {arguments.iterations} --warmup {arguments.warmup}: give at least "
            "1 iteration and 0 or more warm-up calls"
        )
    modes = arguments.mode or [m for m in MODES if device.type == "cuda" or m not in CUDA_MODES]
    if device.type != "cuda" and set(modes) & set(CUDA_MODES):
        raise ControllerError(
            f"--mode {' '.join(sorted(set(modes) & set(CUDA_MODES)))} needs a CUDA GPU; "
            "use eager or compile here"
        )
    output = arguments.output or _default_output(size.name, arguments.batch)
    output.parent.mkdir(parents=True, exist_ok=True)

    def save(report) -> None:
        output.write_text(report.model_dump_json(indent=2) + "\n")

    report = time_example(
        size,
        arguments.batch,
        arguments.seed,
        device,
        arguments.profile or ["none", "torch", "stock"],
        modes,
        arguments.iterations,
        arguments.warmup,
        on_row=save,
    )
    if arguments.json:
        print(report.model_dump_json(indent=2))
    else:
        _print_timing(report, output)
    failed = any(row.error or row.within_expectation is False for row in report.rows)
    return EXIT_OUTSIDE_EXPECTATION if failed else 0


def _default_output(size_name: str, batch: int) -> Path:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"example-time-{size_name}-b{batch}-{stamp}.json"


def _print_timing(report, output: Path) -> None:
    environment = report.environment
    print(
        f"example model {report.size}, batch {report.batch} on {environment.gpu_name} "
        f"(torch {environment.torch}, triton {environment.triton}, python "
        f"{environment.python}, driver {environment.driver}); {report.clock}"
    )
    print(
        f"  {'profile':<10} {'mode':<16} {'median ms':>10} {'min ms':>8} {'x stock':>8} "
        f"{'prepare s':>9}  ok"
    )
    for row in report.rows:
        if row.error:
            print(f"  {row.profile:<10} {row.mode:<16} failed: {row.error}")
            continue
        mark = "yes" if row.within_expectation else "NO (" + ", ".join(row.outside) + ")"
        if row.within_expectation is None:
            mark = "reference of this mode"
        ratio = f"{row.speedup_vs_stock:.3f}" if row.speedup_vs_stock else "-"
        print(
            f"  {row.profile:<10} {row.mode:<16} {row.median_ms:>10.2f} {row.min_ms:>8.2f} "
            f"{ratio:>8} {row.prepare_seconds:>9.1f}  {mark}"
        )
    if report.stock:
        print(f"  x stock: {report.stock}'s median over the row's (above 1: faster than stock)")
    if report.floor:
        floor = report.floor
        print(
            f"  byte floor {floor.milliseconds:.2f} ms: {floor.weight_bytes / 1e9:.2f} GB of "
            f"weights read once per use at {floor.bandwidth_gb_per_s:.0f} GB/s (measured copy)"
        )
    if report.compute_floor:
        products = report.compute_floor
        print(
            f"  compute floor {products.milliseconds:.2f} ms: {products.flops / 1e12:.2f} TFLOP "
            f"of the references' products and attention at {products.rate_tflop_per_s:.0f} "
            "TFLOP/s (measured BF16 product)"
        )
    print(f"JSON written to {output}")
