"""stacked_projection on the H200: the fused kernel against three F.linear and torch.compile.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/projection_gpu.py`
(about two minutes; writes $OUT/projection_gpu.json and prints a table; `--write` puts each
row regime's fastest settings into the kernel and its scripted session). Per workload (the
modulation's condition at batch 1 and 8, three 1024 x 1024 BF16 weights) it first holds the
fused kernel (kernels/stacked_projection_fused.py, the file the scripted tune session ships)
to the operator's contract on every input distribution and counts how far it and the BLAS each
land from the FP64 product, then times as CUDA-graph per-call time: the three `F.linear` calls
(the production path and the reference), `torch.compile(dynamic=False)` of the reference, the
fused kernel at its TUNING, and a sweep of its launch settings (each variant checked before it
is timed), each role in its own graph (benchmarks/graph_roles.py) rotating over INPUT_SETS
input sets, 6 MB of weights each, more than the L2 holds, so weights stream from HBM as in the
model (every modulation has its own weights).
`--device cpu --quick` runs the same code under the Triton interpreter at small sizes (host
clock, no graphs, one variant), to check the script itself.

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))  # its siblings by their own names, whoever imports it
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))  # the kernels that ship

import torch  # noqa: E402,I001  (operators before the kernel module: it selects the interpreter)
from pydantic import BaseModel  # noqa: E402

import operators  # noqa: E402,F401  (selects the Triton interpreter before triton.language loads)
import graph_roles  # noqa: E402
import projection_session  # noqa: E402
import solution_session  # noqa: E402
import stacked_projection_fused as fused  # noqa: E402
from operators.catalog.stacked_projection import DECLARATION  # noqa: E402
from operators.declaration import DISTRIBUTIONS, Axis, OperatorDeclaration, Workload  # noqa: E402

INPUT_SETS = 20
"""20 sets of three 2 MB weights: 120 MB, past the H200's 50 MB L2."""
SEEDS = 2
SWEEP_SECONDS = 60.0
"""Compiling a variant takes about a second; variants past this much time are skipped."""
H200_BYTES_PER_S = 4.8e12
"""The H200's HBM3e peak, for the byte floor (about 4.3 TB/s is reached by a copy)."""
VARIANTS = [
    {"block_n": n, "block_k": k, "num_warps": w, "num_stages": stages, "dot": dot}
    for n, k, w, stages, dot in (
        (2, 1024, 2, 1, False),
        (1, 1024, 1, 1, False),
        (2, 1024, 1, 1, False),
        (1, 1024, 2, 1, False),
        (4, 1024, 2, 1, False),
        (8, 1024, 4, 1, False),
        (4, 1024, 4, 1, False),
        (8, 1024, 8, 1, False),
        (16, 1024, 4, 1, True),
        (16, 1024, 8, 1, True),
        (32, 1024, 8, 1, True),
        (16, 256, 4, 5, True),
        (32, 256, 4, 5, True),
        (16, 512, 4, 3, True),
        (16, 256, 4, 4, True),
        (16, 256, 2, 4, True),
        (32, 256, 4, 3, True),
        (32, 512, 8, 3, True),
        (64, 256, 4, 3, True),
        (4, 512, 4, 3, False),
        (8, 512, 4, 3, False),
        (8, 256, 4, 3, False),
    )
]
"""Launch settings tried, in this order: columns per program, K per step, warps, stages, tl.dot
or multiply-and-sum (which allows fewer columns per program, so more programs). First the
whole of K in one step, so each program issues all its weight loads at once (a call moves only
6 MB, and a loop of K steps waits on memory once per step; at one row this was the fastest,
2026-12-04), then the points swept before. Splitting K among programs (partial sums added
by the last to arrive) was tried on the H200 on 2026-12-03 and ran 6.9-8.9 us against 5.26
unsplit at batch 8, so the kernel does not split."""


class Accuracy(BaseModel):
    """How far the fused kernel lands from the reference, and each from the FP64 product."""

    distribution: str
    violation: str | None
    differing_elements: int
    elements: int
    fused_max_steps_from_fp64: float
    blas_max_steps_from_fp64: float


class Timing(BaseModel):
    """One role's CUDA-graph per-call time at one workload (host microseconds on the CPU)."""

    role: str
    settings: dict | None = None
    us: float | None = None
    gb_per_s: float | None = None
    problem: str | None = None


class WorkloadResult(BaseModel):
    workload: str
    batch: int
    weight_bytes: int
    floor_us: float
    contract: str
    accuracy: list[Accuracy]
    timings: list[Timing]


class Report(BaseModel):
    device: str
    torch: str
    triton: str
    session_current: bool
    tuning: dict
    seconds: float
    results: list[WorkloadResult]


def reference(x, w0, w1, w2):
    return DECLARATION.reference(x, w0, w1, w2)


def fused_with(settings: dict) -> Callable:
    """The fused kernel with `settings` in every regime."""

    def kernel(x, w0, w1, w2):
        return graph_roles.call_with_settings(
            fused, "stacked_projection_kernel", settings, x, w0, w1, w2
        )

    return kernel


def steps_from(got: torch.Tensor, exact: torch.Tensor) -> float:
    """The largest |got - exact| in BF16 steps at the exact value (an output rounded once
    from an exact sum is within half a step; past one step, its sum erred)."""
    step = torch.exp2(torch.floor(torch.log2(exact.abs().clamp_min(2.0**-100))) - 7)
    return float(((got.double() - exact).abs() / step).max())


def accuracy(declaration: OperatorDeclaration, kernel, workload: Workload, device) -> list:
    """Per distribution: the first contract violation over SEEDS seeds, and the errors."""
    rows = []
    for distribution in DISTRIBUTIONS:
        violation, differing, elements, fused_error, blas_error = None, 0, 0, 0.0, 0.0
        for seed in range(SEEDS):
            inputs = declaration.make_inputs(workload, seed, distribution, device)
            got = kernel(*inputs)
            expected = declaration.run_reference(*inputs)
            x = inputs[0].double()
            for spec, tensor, blas, weight in zip(
                declaration.outputs, got, expected, inputs[1:], strict=True
            ):
                found = declaration.contract.check(spec.name, tensor, blas)
                if found is not None and violation is None:
                    violation = f"seed {seed}: {found.describe()}"
                exact = x @ weight.double().T
                differing += int((tensor != blas).sum())
                elements += tensor.numel()
                fused_error = max(fused_error, steps_from(tensor, exact))
                blas_error = max(blas_error, steps_from(blas, exact))
        rows.append(
            Accuracy(
                distribution=distribution,
                violation=violation,
                differing_elements=differing,
                elements=elements,
                fused_max_steps_from_fp64=fused_error,
                blas_max_steps_from_fp64=blas_error,
            )
        )
    return rows


def measure(
    declaration: OperatorDeclaration, workload: Workload, device, quick: bool, deadline: float
) -> WorkloadResult:
    batch = workload.axes["batch"]
    sizes = declaration.axis_sizes(workload)
    weight_bytes = 3 * sizes["outputs"] * sizes["features"] * 2
    moved = weight_bytes + batch * sizes["features"] * 2 + 3 * batch * sizes["outputs"] * 2
    rows = accuracy(declaration, fused.stacked_projection_kernel, workload, device)
    broken = any(row.violation for row in rows)
    roles: dict[str, Callable] = {"three_linear": reference}
    if device.type == "cuda":
        roles["compiled"] = torch.compile(reference, dynamic=False)
    if not broken:
        roles["fused"] = fused.stacked_projection_kernel
    settings: dict[str, dict] = {"fused": dict(fused.TUNING[fused.regime(batch)])}
    skipped = []
    for number, variant in enumerate(VARIANTS[:1] if quick else [] if broken else VARIANTS):
        name = f"variant{number}"
        settings[name] = variant
        if time.time() > deadline:
            skipped.append(name)
            continue
        kernel = fused_with(variant)
        checked = accuracy(declaration, kernel, workload, device)[:1] if not quick else rows
        if checked[0].violation is None:
            roles[name] = kernel
        else:
            skipped.append(name)
    sets = [
        declaration.make_inputs(workload, seed=100 + index, device=device)
        for index in range(1 if quick else INPUT_SETS)
    ]
    if device.type == "cuda":
        times = graph_roles.graph_times(roles, sets)
    else:
        times = graph_roles.host_times(roles, sets)
    timings = []
    for name in [*roles, *skipped]:
        value = times.get(name, "skipped: sweep time, or it broke the contract")
        timing = Timing(role=name, settings=settings.get(name))
        if isinstance(value, float):
            timing.us = round(value, 3)
            timing.gb_per_s = round(moved / (value * 1e-6) / 1e9, 1)
        else:
            timing.problem = value
        timings.append(timing)
    return WorkloadResult(
        workload=workload.name,
        batch=batch,
        weight_bytes=weight_bytes,
        floor_us=round(moved / H200_BYTES_PER_S * 1e6, 3),
        contract=declaration.contract.describe(),
        accuracy=rows,
        timings=timings,
    )


def small(declaration: OperatorDeclaration) -> OperatorDeclaration:
    """The operator at 96 features and 80 outputs (not powers of two), for the interpreter."""
    sizes = {"features": 96, "outputs": 80}
    axes = tuple(
        Axis(name=a.name, kind="const", value=sizes[a.name]) if a.kind == "const" else a
        for a in declaration.axes
    )
    fields = {name: getattr(declaration, name) for name in type(declaration).model_fields}
    return OperatorDeclaration(**{**fields, "axes": axes})


def print_table(report: Report) -> None:
    print(f"{report.device} | torch {report.torch} | triton {report.triton}")
    print(f"session current: {report.session_current}; fused TUNING {report.tuning}")
    for result in report.results:
        print(f"\n{result.workload} (batch {result.batch}): floor {result.floor_us} us")
        for row in result.accuracy:
            state = row.violation or "keeps the contract"
            print(
                f"  {row.distribution:>12}: {state}; {row.differing_elements}/{row.elements} "
                f"differ from the BLAS; most BF16 steps from FP64: fused "
                f"{row.fused_max_steps_from_fp64:.2f}, BLAS {row.blas_max_steps_from_fp64:.2f}"
            )
        for timing in result.timings:
            if timing.us is None:
                print(f"  {timing.role:>13}: {timing.problem}")
                continue
            detail = f"  {timing.settings}" if timing.role.startswith("variant") else ""
            print(f"  {timing.role:>13}: {timing.us:8.2f} us {timing.gb_per_s:7.0f} GB/s{detail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="small sizes (for the interpreter)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp")))
    parser.add_argument(
        "--write",
        action="store_true",
        help="write the fastest settings into the kernel's TUNING and its scripted session",
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("projection_gpu: no CUDA device here; use --device cpu --quick", file=sys.stderr)
        return 2
    if device.type != "cuda" and not args.quick:
        print("projection_gpu: the interpreter needs --quick (small sizes)", file=sys.stderr)
        return 2
    started = time.time()
    declaration = small(DECLARATION) if args.quick else DECLARATION
    deadline = started + SWEEP_SECONDS
    results = []
    for workload in declaration.workloads:
        results.append(measure(declaration, workload, device, args.quick, deadline))
        deadline = time.time() + SWEEP_SECONDS
    report = Report(
        device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu (interpreter)",
        torch=torch.__version__,
        triton=__import__("triton").__version__,
        session_current=projection_session.session_text()
        == projection_session.SESSION_FILE.read_text(),
        tuning={name: dict(settings) for name, settings in fused.TUNING.items()},
        seconds=round(time.time() - started, 1),
        results=results,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "projection_gpu.json").write_text(report.model_dump_json(indent=2) + "\n")
    print_table(report)
    print(f"\nwrote {args.out / 'projection_gpu.json'} in {report.seconds} s")
    if args.write:
        chosen = fastest_settings(report, fused.TUNING)
        kernel_file = Path(fused.__file__)
        solution_session.write_tuning(projection_session.OPERATOR, kernel_file, chosen)
        kept = (
            args.out / f"{projection_session.OPERATOR}.kernel.py.txt"
        )  # what a device call returns
        kept.write_text(kernel_file.read_text())
        print(f"fastest settings per regime {chosen}: written into {kernel_file}")
    return 0


def fastest_settings(report: Report, tuning: dict[str, dict]) -> dict[str, dict]:
    """`tuning` with each regime's settings replaced by the fastest (the shipped ones or a
    variant's): least time summed over the regime's workloads, among settings timed at every
    one of them; a regime without workloads keeps its settings."""
    chosen = {name: dict(settings) for name, settings in tuning.items()}
    for name in chosen:
        mine = [result for result in report.results if fused.regime(result.batch) == name]
        settings: dict[str, dict] = {}
        times: dict[str, list[float | None]] = {}
        for result in mine:
            for timing in result.timings:
                if timing.settings is not None:
                    settings[timing.role] = timing.settings
                    times.setdefault(timing.role, []).append(timing.us)
        totals = {
            role: sum(us) for role, us in times.items() if len(us) == len(mine) and None not in us
        }
        if totals:
            chosen[name] = dict(settings[min(totals, key=totals.get)])
    return chosen


if __name__ == "__main__":
    sys.exit(main())
