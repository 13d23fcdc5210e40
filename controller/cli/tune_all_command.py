"""`controller tune-all`: tune many operators in one resumable batch, one `tune run` each.

Without OPS every catalog operator is tuned; with `--captured DIR` (a `controller capture-ops`
folder) every operator the capture saw, on its captured workloads weighted by call count.
`--gpus 0,1` runs one worker per GPU, each run pinned to its GPU under a device lock;
`--ray ADDRESS` submits each run as a Ray task asking for one GPU instead. Ctrl-C stops the
batch; `--resume BATCH` carries on.
"""

import argparse
from pathlib import Path

from controller.cli.run_options import DEFAULT_RUNS_DIR

EXIT_INTERRUPTED = 130
PASSED_THROUGH = (
    "agent",
    "device",
    "target",
    "fence",
    "base_url",
    "max_attempts",
    "max_minutes",
    "max_tokens",
    "max_dollars",
    "patience",
    "target_speedup",
)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune-all",
        epilog="example: controller tune-all rms_norm rotate_qk --device cuda --max-attempts 4",
        help="tune every (or each named) catalog operator in one resumable batch",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("operators", nargs="*", metavar="OP", help="operators (default: all)")
    parser.add_argument(
        "--captured",
        type=Path,
        metavar="DIR",
        help="workloads from a `controller capture-ops` folder, as `generate --captured` makes "
        "them; default operators: those the capture holds",
    )
    parser.add_argument("--agent", metavar="SPEC", help="agent for every run (default: autotune)")
    parser.add_argument("--base-url", metavar="URL", help="API server for the agent")
    parser.add_argument(
        "--device", choices=("cuda", "cpu"), help="where candidates run (cuda where there is one)"
    )
    parser.add_argument("--target", type=Path, metavar="REPO", help="target git repository (.)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gpus", metavar="LIST", help="GPU indices, one worker each (0)")
    where.add_argument("--ray", metavar="ADDRESS", help="submit each run to this Ray cluster")
    parser.add_argument(
        "--ray-resource",
        default="GPU",
        metavar="NAME",
        help="the Ray resource each run asks one of (default: GPU)",
    )
    parser.add_argument("--fence", choices=("landlock", "docker"), help="fence of every run")
    parser.add_argument("--unfenced", action="store_true", help="run the agents without a fence")
    parser.add_argument("--max-attempts", type=int, metavar="N", help="attempts per run")
    parser.add_argument("--max-minutes", type=float, metavar="MIN", help="wall time per run")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="tokens per run")
    parser.add_argument("--max-dollars", type=float, metavar="USD", help="cost per run")
    parser.add_argument("--patience", type=int, metavar="N", help="attempts without promotion")
    parser.add_argument("--target-speedup", type=float, metavar="X", help="stop at this speedup")
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="do not evaluate each baseline first (the runs' gates still judge every "
        "candidate); kept for the whole batch",
    )
    parser.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR, metavar="DIR")
    parser.add_argument("--resume", type=Path, metavar="BATCH", help="continue a batch folder")
    parser.set_defaults(func=run)


def run(arguments: argparse.Namespace, evaluator=None) -> int:
    """Start or resume a batch; `evaluator` replaces the preflight's evaluator (tests)."""
    from controller.batch import record as records
    from controller.batch.devices import parse_gpus
    from controller.batch.tune_all import run_batch, start_batch

    gpus = parse_gpus(arguments.gpus) if arguments.gpus else ["0"]
    if arguments.ray:
        _check_ray()
    if arguments.resume:
        folder = _batch_folder(arguments.resume, arguments.runs_dir)
        given = {field: _given(arguments, field) for field in PASSED_THROUGH}
        given["unfenced"] = True if arguments.unfenced else None
        capture = str(arguments.captured.resolve()) if arguments.captured else None
        records.refuse_changed(records.load(folder), arguments.operators or None, given, capture)
        print(f"controller: resuming batch {folder.name}")
    else:
        folder = start_batch(
            arguments.runs_dir,
            _selection(arguments),
            _options(arguments),
            preflight=not arguments.no_preflight,
            capture=arguments.captured,
        )
        print(f"controller: batch {folder.name} in {folder}")
    workers = _workers(arguments, folder, gpus)
    record, summary = run_batch(folder, workers, evaluator=evaluator)
    print(f"controller: summary in {folder / 'summary.md'}")
    if record.state == "interrupted":
        print(f"controller: batch interrupted; resume with --resume {folder}")
        return EXIT_INTERRUPTED
    return 0 if all(row.status == "done" for row in summary.operators) else 1


def _workers(arguments, folder: Path, gpus: list[str]):
    if arguments.ray:
        from controller.batch.ray_workers import RayWorkers

        return RayWorkers(folder, arguments.ray, gpu_resource=arguments.ray_resource)
    from controller.batch.workers import LocalWorkers

    return LocalWorkers(folder, gpus)


def _check_ray() -> None:
    from controller.errors import ControllerError

    try:
        import ray  # noqa: F401
    except ImportError:
        raise ControllerError(
            "--ray needs Ray on this machine: pip install 'kernel-controller[cluster]'"
        ) from None


def _given(arguments, field: str):
    value = getattr(arguments, field, None)
    if field == "target" and value is not None:
        return str(value.resolve())
    return value


def _selection(arguments) -> list[str]:
    from controller.errors import ControllerError
    from operators import REGISTRY

    if arguments.captured is not None:
        from gates.calibration.contract_file import calibrated_operators
        from gates.tasks.captured import captured_operators

        names = captured_operators(arguments.captured, arguments.operators)
        calibrated = calibrated_operators(arguments.captured, names)
        if calibrated:
            print(
                f"controller: calibrated contracts (FP64 oracle) from {arguments.captured} "
                f"for {', '.join(calibrated)}"
            )
    else:
        names = arguments.operators or [d.name for d in REGISTRY if d.preferred is not None]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ControllerError(f"operator {repeated[0]!r} is listed twice; list each once")
    return names


def _options(arguments):
    from controller.batch.record import RunOptions
    from controller.errors import ControllerError

    target = (arguments.target or Path(".")).resolve()
    if not (target / ".git").exists():
        raise ControllerError(f"{target} is not a git repository; pass --target REPO")
    values = {field: _given(arguments, field) for field in PASSED_THROUGH}
    values.update(target=str(target), unfenced=arguments.unfenced)
    values["agent"] = values["agent"] or "autotune"
    if values["device"] is None:
        from operators import triton_runtime

        values["device"] = "cuda" if triton_runtime.cuda_available() else "cpu"
    values["fence"] = values["fence"] or "landlock"
    return RunOptions(**values)


def _batch_folder(given: Path, runs_dir: Path) -> Path:
    from controller.errors import ControllerError

    for folder in (given, runs_dir / given):
        if (folder / "batch.json").is_file():
            return folder.resolve()
    raise ControllerError(f"--resume {given}: no batch folder there (no batch.json)")
