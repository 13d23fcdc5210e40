"""`controller example run`: the example model under kernel profiles `none` and `torch`.

It shows in one screen that the production kernels keep the model's outputs within what the
operator contracts promise.
"""

import json

EXIT_OUTSIDE_EXPECTATION = 1


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
