"""`controller profile`: where a driver's step goes, by registry operator, module and gap."""

import os
from pathlib import Path

from controller.profiling.driver import add_driver_argument


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        epilog=(
            "example: controller profile --graph --output runs/profile "
            "-- controller.profiling.example_driver:forward pi05 1"
        ),
        help="rank a driver's regions by device time per step and account for the whole step",
        description=(
            "Profile DRIVER with torch.profiler after --warmup steps. Each kernel goes, through "
            "the call that launched it, to the innermost registry operator call enclosing that "
            "launch, else the attention call, else the module call (layer indices folded). The "
            "step is accounted for in full (kernel time plus the idle gaps between kernels) and "
            "held against the same step timed without the profiler in the same mode. --graph "
            "(CUDA) captures the step into one CUDA graph and profiles its replays, each kernel "
            "labelled by the ranges open when it was captured. Writes hotspots.json, "
            "hotspots.md and a bar chart. Without CUDA it still runs and says device "
            "attribution needs CUDA."
        ),
    )
    parser.add_argument("--output", type=Path, required=True, help="folder for the report")
    parser.add_argument("--warmup", type=int, default=1, help="unprofiled steps first")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps")
    parser.add_argument(
        "--timed-steps",
        type=int,
        default=10,
        help="steps timed without the profiler, the wall time the account is held against",
    )
    parser.add_argument(
        "--graph",
        action="store_true",
        help="profile the step captured as one CUDA graph and replayed (CUDA only)",
    )
    parser.add_argument(
        "--kernel-profile",
        metavar="NAME",
        help="run the driver under this kernel profile: none, torch, stock, auto or a name "
        "installed in tuned/ (what remains after tuning); default: the environment's "
        "CONTROLLER_KERNEL_PROFILE, else none",
    )
    add_driver_argument(parser)
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.errors import ControllerError
    from controller.profiling.driver import load_driver
    from controller.profiling.hotspot_files import write_report
    from controller.profiling.hotspots import build_report
    from controller.profiling.profiled_run import profile_driver

    if arguments.steps < 1 or arguments.warmup < 0 or arguments.timed_steps < 1:
        raise ControllerError("--steps and --timed-steps must be at least 1, --warmup at least 0")
    from operators.selection import PROFILE_VARIABLE, use_kernel_profile

    kernel_profile = arguments.kernel_profile or os.environ.get(PROFILE_VARIABLE) or "none"
    with use_kernel_profile(_selection(kernel_profile)):
        step = load_driver(arguments.driver)
        mode = "graph" if arguments.graph else "eager"
        profiled = profile_driver(
            step, mode, arguments.warmup, arguments.steps, arguments.timed_steps
        )
    report = build_report(profiled, arguments.driver, kernel_profile)
    if not report.device_attribution:
        print("profile: no CUDA device; device attribution needs CUDA (host time shown instead)")
    for row in report.regions[:10]:
        print(f"{row.kernel_us_per_step:12.1f} us/step  {row.kind:9} {row.region}")
    account = report.account
    print(
        f"registry calls: {report.registry_us_per_step:.1f} us/step; "
        f"outside registry calls: {report.outside_registry_us_per_step:.1f} us/step; "
        f"gaps: {account.gap_us_per_step:.1f} us/step"
    )
    print(
        f"step account {account.account_us_per_step:.1f} us against "
        f"{account.wall.unprofiled_median_us:.1f} us unprofiled ({account.wall.clock}): "
        f"{account.agreement:+.1%}"
    )
    if report.graph is not None:
        print(f"replayed kernel time labelled: {report.graph.labelled_share_of_time:.1%}")
    for path in write_report(report, arguments.output):
        print(f"wrote {path}")
    return 0


def _selection(name: str):
    """Kernel profile `name`, resolved before the driver runs; an unknown name, or one this
    machine cannot load, is a one-line error naming what is installed."""
    from controller.errors import ControllerError
    from operators.errors import ProfileError
    from operators.profiles import TUNED_ROOT, profile_names
    from operators.selection import BUILTIN_PROFILES, KernelSelection

    known = [*BUILTIN_PROFILES, *profile_names(TUNED_ROOT)]
    if name not in known:
        raise ControllerError(f"--kernel-profile {name!r}: not a profile here; use one of "
                              f"{', '.join(known)}")  # fmt: skip
    try:
        return KernelSelection(name).prepare()
    except ProfileError as error:
        raise ControllerError(f"--kernel-profile {name!r}: {error}") from None
