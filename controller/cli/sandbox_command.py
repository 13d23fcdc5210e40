"""`controller sandbox`: probe what each fence can enforce here, or run one command fenced."""

import argparse
import json
import sys
from pathlib import Path

FENCES = ("landlock", "docker", "none")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="probe the fences or run one command inside a fence",
        description="Probe what each fence enforces on this machine, or run one command fenced.",
    )
    actions = parser.add_subparsers(dest="sandbox_action", metavar="ACTION", required=True)

    probe = actions.add_parser(
        "probe",
        help="show what each fence can enforce here",
        description="Show what each fence (Landlock, Docker) can enforce on this machine: the "
        "Landlock ABI and its file and network rules, whether a Docker daemon answers.",
    )
    probe.add_argument("--json", action="store_true", help="print machine-readable JSON")
    probe.set_defaults(func=run_probe)

    run = actions.add_parser(
        "run",
        epilog=(
            "example: controller sandbox run --fence landlock --workspace /tmp/ws "
            '-- python3 -c "print(1)"'
        ),
        help="run one command inside a fence and exit with its exit code (124 on timeout)",
        description="Run CMD fenced; exits with its exit code, 124 when the timeout kills it.",
    )
    run.add_argument("--fence", required=True, help="landlock, docker, or none (with --unfenced)")
    run.add_argument("--workspace", required=True, help="read-write folder; must exist")
    run.add_argument("--read", action="append", default=[], metavar="PATH", help="read-only path")
    run.add_argument("--write", action="append", default=[], metavar="PATH", help="extra rw path")
    run.add_argument(
        "--readonly-within",
        action="append",
        default=[],
        metavar="PATH",
        help="path inside the workspace kept read-only (e.g. .git)",
    )
    run.add_argument("--allow-tcp", action="append", default=[], metavar="PORT")
    run.add_argument("--env", action="append", default=[], metavar="NAME", help="pass through")
    run.add_argument("--timeout", default="600", metavar="S", help="wall-clock seconds")
    run.add_argument("--memory", default="4096", metavar="MB", help="memory limit in MiB")
    run.add_argument("--processes", default="512", metavar="N", help="processes at once")
    run.add_argument("--gpu", action="store_true", help="expose the NVIDIA devices")
    run.add_argument("--unfenced", action="store_true", help="allow --fence none (no isolation)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    run.set_defaults(func=run_command)


def run_probe(arguments) -> int:
    from sandbox.docker_fence import DockerFence
    from sandbox.landlock import LandlockFence
    from sandbox.unfenced import Unfenced

    probes = [fence.probe() for fence in (LandlockFence(), DockerFence(), Unfenced())]
    if arguments.json:
        print(json.dumps([probe.model_dump() for probe in probes], indent=2))
        return 0
    print(f"{'fence':<10} {'available':<10} what is enforced / why not")
    for probe in probes:
        status = "yes" if probe.available else "NO"
        print(f"{probe.fence:<10} {status:<10} {'; '.join(probe.reasons)}")
        for key, value in probe.details.items():
            print(f"{'':<21} {key}: {value}")
    return 0


def run_command(arguments) -> int:
    from sandbox.errors import FenceError
    from sandbox.fence import get_fence
    from sandbox.policy import FencePolicy, ResourceLimits

    command = list(arguments.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise FenceError("no command given; put it after `--`")
    if arguments.fence not in FENCES:
        raise FenceError(f"unknown fence {arguments.fence!r}; choose one of {', '.join(FENCES)}")
    ports = tuple(_number(text, "--allow-tcp", int) for text in arguments.allow_tcp)
    limits = ResourceLimits(
        memory_mb=_number(arguments.memory, "--memory", int),
        processes=_number(arguments.processes, "--processes", int),
    )
    policy = FencePolicy(
        workspace=Path(arguments.workspace),
        readable=tuple(Path(path) for path in arguments.read),
        writable=tuple(Path(path) for path in arguments.write),
        readonly_within_workspace=tuple(Path(path) for path in arguments.readonly_within),
        allow_tcp=ports,
        env=tuple(arguments.env),
        limits=limits,
        timeout_s=_number(arguments.timeout, "--timeout", float),
        gpu=arguments.gpu,
    )
    if arguments.unfenced and arguments.fence != "none":
        raise FenceError("--unfenced only goes with --fence none")
    fence = get_fence(arguments.fence, unfenced=arguments.unfenced)
    result = fence.run(command, policy)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.timed_out:
        print(f"controller: command killed after {policy.timeout_s:g} s", file=sys.stderr)
    sys.stdout.flush()
    return result.returncode


def _number(text: str, flag: str, kind):
    from sandbox.errors import FenceError

    try:
        value = kind(text)
    except ValueError:
        raise FenceError(f"{flag} needs a number, got {text!r}") from None
    if value <= 0 and flag != "--allow-tcp":
        raise FenceError(f"{flag} must be positive, got {text!r}")
    return value
