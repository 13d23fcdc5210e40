"""Check every catalog kernel at the pi0.5 workloads on CUDA, and time eager Torch against Triton.

Run from the repository root on a GPU machine: `python benchmarks/catalog_gpu.py`. Timing is
device-only: per sample the inputs are reset from pristine copies and L2 is flushed by writing
a buffer of at least twice its size, both queued ahead of the start event; no host sync
between samples; events are read after the loop; the median is reported. Eager and Triton
samples are interleaved so clock drift hits both alike. `--dry-run` runs the same code on the
CPU (host clock, scaled-down workloads, Triton interpreter) to check the script itself.
`--host` instead measures the host time of one registry call against its reference's ATen ops.

Its answer: docs/benchmarks.md, "The model in other modes and profiles".
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import operators  # noqa: E402,F401  (selects the Triton interpreter before triton.language loads)
from operators.catalog import CATALOG  # noqa: E402
from operators.catalog.checking import first_violation, scaled_down  # noqa: E402
from operators.declaration import DISTRIBUTIONS, OperatorDeclaration, Workload  # noqa: E402
from operators.environment import current_environment_identity  # noqa: E402
from operators.kernel_launch import LaunchBinding  # noqa: E402
from operators.ops import ops  # noqa: E402
from operators.selection import use_kernel_profile  # noqa: E402

MIN_SAMPLES = 1000
MIN_FLUSH_BYTES = 512 * 2**20
"""At least 2x L2; larger, so the flush outlasts the host's launches and keeps the queue full."""
WARMUP_CALLS = 3
PRIMING_SLEEP_CYCLES = 20_000_000


class CudaEventClock:
    """Start/end events recorded on the stream; read only after the whole loop."""

    def __init__(self) -> None:
        self._pairs: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def start(self) -> int:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self._pairs.append((start, end))
        return len(self._pairs) - 1

    def stop(self, token: int) -> None:
        self._pairs[token][1].record()

    def microseconds(self) -> list[float]:
        torch.cuda.synchronize()
        return [start.elapsed_time(end) * 1000.0 for start, end in self._pairs]


class HostClock:
    """The dry run's stand-in: host time around synchronous CPU calls."""

    def __init__(self) -> None:
        import time

        self._now = time.perf_counter
        self._spans: list[list[float]] = []

    def start(self) -> int:
        self._spans.append([self._now(), 0.0])
        return len(self._spans) - 1

    def stop(self, token: int) -> None:
        self._spans[token][1] = self._now()

    def microseconds(self) -> list[float]:
        return [(end - start) * 1e6 for start, end in self._spans]


def flush_bytes(device: torch.device) -> int:
    """How much a flush writes: >= 2x L2 and >= MIN_FLUSH_BYTES on CUDA, 1 MiB on the CPU."""
    if device.type != "cuda":
        return 2**20
    l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
    return max(2 * l2_bytes, MIN_FLUSH_BYTES)


def median_times(
    roles: dict[str, Callable[..., object]],
    pristine: list[torch.Tensor],
    params: dict[str, float],
    samples: int,
    flush: torch.Tensor,
) -> dict[str, float]:
    """Median device time of each role, samples interleaved across roles."""
    working = [tensor.clone() for tensor in pristine]
    for run in roles.values():
        for _ in range(WARMUP_CALLS):
            run(*working, **params)
    cuda = flush.device.type == "cuda"
    clocks = {role: CudaEventClock() if cuda else HostClock() for role in roles}
    if cuda:
        torch.cuda.synchronize()
        torch.cuda._sleep(PRIMING_SLEEP_CYCLES)  # lets the host queue samples ahead of the GPU
    for sample in range(samples):
        for role, run in roles.items():
            for target, source in zip(working, pristine, strict=True):
                target.copy_(source)
            flush.fill_(sample % 251)
            token = clocks[role].start()
            run(*working, **params)
            clocks[role].stop(token)
    return {role: statistics.median(clock.microseconds()) for role, clock in clocks.items()}


def contract_result(
    declaration: OperatorDeclaration, workload: Workload, seeds: range, device: torch.device
) -> str:
    """'ok', or where the production kernel first broke its contract."""
    for seed in seeds:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(
                declaration, declaration.preferred, workload, seed, distribution, device
            )
            if violation is not None:
                return f"FAIL (seed {seed}, {distribution}): {violation.describe()}"
    return "ok"


def benchmark(
    declarations: list[OperatorDeclaration], samples: int, seeds: range, device: torch.device
) -> list[dict]:
    flush = torch.empty(flush_bytes(device), dtype=torch.uint8, device=device)
    rows = []
    for declaration in declarations:
        for workload in declaration.workloads:
            contract = contract_result(declaration, workload, seeds, device)
            pristine = declaration.make_inputs(workload, seed=0, device=device)
            roles = {"eager": declaration.reference, "triton": declaration.preferred}
            times = median_times(roles, pristine, declaration.params, samples, flush)
            rows.append(
                {
                    "operator": declaration.name,
                    "workload": workload.name,
                    "axes": workload.axes,
                    "eager_us": times["eager"],
                    "triton_us": times["triton"],
                    "speedup": times["eager"] / times["triton"],
                    "contract": contract,
                }
            )
            print(f"  {declaration.name}/{workload.name}: {contract}", file=sys.stderr)
    return rows


HOST_CALLS = 40
"""Calls per host-time sample: few enough that their launches fit the device's queue."""
HOST_ROLES = {
    "reference": ("torch", True, False),
    "ops, Triton's launch": ("none", False, False),
    "ops, bound launch": ("none", True, False),
    "launcher, bound launch": ("none", True, True),
}
"""role: (kernel profile, bound launches, call the launcher directly instead of `ops`)."""


def host_overhead(declarations: list[OperatorDeclaration], rounds: int) -> list[dict]:
    """Host microseconds per call at each operator's first workload, for each HOST_ROLES role.

    The device is first held busy by a sleep kernel, so every call only queues its launches
    and the host clock measures the host's work alone; roles alternate, median of `rounds`.
    """
    rows = []
    for declaration in declarations:
        inputs = declaration.make_inputs(declaration.workloads[0], seed=0, device="cuda")
        samples: dict[str, list[float]] = {role: [] for role in HOST_ROLES}
        for _ in range(rounds):
            for role, (profile, bound, direct) in HOST_ROLES.items():
                LaunchBinding.enabled = bound
                call = declaration.preferred if direct else getattr(ops, declaration.name)
                with use_kernel_profile(profile):
                    for _ in range(WARMUP_CALLS):
                        call(*inputs, **declaration.params)
                    torch.cuda.synchronize()
                    torch.cuda._sleep(PRIMING_SLEEP_CYCLES)
                    start = time.perf_counter()
                    for _ in range(HOST_CALLS):
                        call(*inputs, **declaration.params)
                    elapsed = time.perf_counter() - start
                    torch.cuda.synchronize()
                samples[role].append(elapsed / HOST_CALLS * 1e6)
        LaunchBinding.enabled = True
        row = {"operator": declaration.name, "workload": declaration.workloads[0].name}
        row.update({role: statistics.median(values) for role, values in samples.items()})
        rows.append(row)
    return rows


def host_table(rows: list[dict]) -> str:
    lines = [
        "| operator | workload | " + " | ".join(f"{role} us" for role in HOST_ROLES) + " |",
        "| --- | --- |" + " ---: |" * len(HOST_ROLES),
    ]
    for row in rows:
        values = " | ".join(f"{row[role]:.1f}" for role in HOST_ROLES)
        lines.append(f"| {row['operator']} | {row['workload']} | {values} |")
    return "\n".join(lines)


def markdown_table(rows: list[dict], header: dict) -> str:
    lines = [f"- {key}: {value}" for key, value in header.items()]
    lines += [
        "",
        "| operator | workload | eager us | triton us | speedup | contract ok |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['operator']} | {row['workload']} | {row['eager_us']:.1f} | "
            f"{row['triton_us']:.1f} | {row['speedup']:.2f}x | {row['contract']} |"
        )
    return "\n".join(lines)


def timing_description(samples: int, device: torch.device) -> str:
    if device.type != "cuda":
        return f"median of {samples} samples, host clock (dry run: not a measurement)"
    return (
        f"median of {samples} samples, CUDA events; inputs reset and L2 flushed "
        f"({flush_bytes(device) // 2**20} MiB written) before each start event"
    )


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=MIN_SAMPLES, help="timed samples per role")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per contract check")
    parser.add_argument("--operators", nargs="*", help="only these operators (default: all)")
    parser.add_argument(
        "--host",
        action="store_true",
        help="only the host time of one registry call against its reference (CUDA)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="CPU, scaled-down workloads, host clock: checks the script, measures nothing",
    )
    arguments = parser.parse_args(argv)
    if arguments.host and arguments.dry_run:
        parser.error("--host measures CUDA launches; it has no dry run")
    if not arguments.dry_run and arguments.samples < MIN_SAMPLES:
        parser.error(f"--samples must be >= {MIN_SAMPLES} for a real measurement")
    return arguments


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    if not arguments.dry_run and not torch.cuda.is_available():
        print(
            "catalog_gpu: no CUDA device here; use --dry-run to check the script", file=sys.stderr
        )
        return 2
    device = torch.device("cpu" if arguments.dry_run else "cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 references stay float32
    declarations = [d for d in CATALOG if not arguments.operators or d.name in arguments.operators]
    if arguments.host:
        table = host_table(host_overhead(declarations, rounds=7))
        print(table)
        if os.environ.get("OUT"):
            Path(os.environ["OUT"]).mkdir(parents=True, exist_ok=True)
            (Path(os.environ["OUT"]) / "host_overhead.md").write_text(table + "\n")
        return 0
    if arguments.dry_run:
        declarations = [scaled_down(declaration) for declaration in declarations]
    rows = benchmark(declarations, arguments.samples, range(arguments.seeds), device)
    identity = current_environment_identity()
    header = {
        "command": "python benchmarks/catalog_gpu.py " + " ".join(argv or sys.argv[1:]),
        "device": identity.gpu_name,
        "versions": f"torch {identity.torch}, triton {identity.triton}, "
        f"python {identity.python}, driver {identity.driver}",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "timing": timing_description(arguments.samples, device),
    }
    table = markdown_table(rows, header)
    print(table)
    out = os.environ.get("OUT")
    if out:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "catalog_gpu.md").write_text(table + "\n")
        report = {"header": header, "environment": identity.model_dump(), "rows": rows}
        (folder / "catalog_gpu.json").write_text(json.dumps(report, indent=2) + "\n")
    failed = [row for row in rows if row["contract"] != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
