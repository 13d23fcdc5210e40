"""`controller profile`: rank a driver's regions by time per step (hotspots)."""

from pathlib import Path

from controller.profiling.driver import add_driver_argument


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="rank a driver's regions by GPU time per step",
        description=(
            "Profile DRIVER with torch.profiler after --warmup steps and attribute each kernel, "
            "through its host launch, to the registry operator call, attention call or module "
            "call (layer indices folded) that enclosed it. Writes hotspots.json, hotspots.md "
            "and a bar chart. Without CUDA it still runs and says device attribution needs CUDA."
        ),
    )
    parser.add_argument("--output", type=Path, required=True, help="folder for the report")
    parser.add_argument("--warmup", type=int, default=1, help="unprofiled steps first")
    parser.add_argument("--steps", type=int, default=1, help="profiled steps")
    add_driver_argument(parser)
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.errors import ControllerError
    from controller.profiling.driver import load_driver
    from controller.profiling.hotspot_files import write_report
    from controller.profiling.hotspots import attribute, profile_steps

    if arguments.steps < 1 or arguments.warmup < 0:
        raise ControllerError("--steps must be at least 1 and --warmup at least 0")
    step = load_driver(arguments.driver)
    profiler = profile_steps(step, arguments.warmup, arguments.steps)
    report = attribute(profiler, arguments.driver, arguments.warmup, arguments.steps)
    if not report.device_attribution:
        print("profile: no CUDA device; device attribution needs CUDA (CPU time shown instead)")
    for row in report.hotspots[:10]:
        print(f"{row.time_us_per_step:12.1f} us/step  {row.kind:9} {row.region}")
    print(f"outside registry calls: {report.outside_registry_us_per_step:.1f} us/step")
    for path in write_report(report, arguments.output):
        print(f"wrote {path}")
    return 0
