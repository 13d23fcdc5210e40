"""gated_gelu_projection on the H200: the fused kernel against the unfused path and compile.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/gated_projection_gpu.py`
(under a minute; writes $OUT/gated_projection_gpu.json and prints a table). Per workload (50,
400, 576 and 4608 tokens) it first holds the fused kernel (the file the scripted tune session
ships, kernels/gated_gelu_projection_fused.py) to the operator's contract on every input
distribution, reporting its worst error in BF16 steps past atol, then times as CUDA-graph
per-call time: production (two `F.linear` and the production gated-GELU kernel), the fused
kernel at its TUNING, `torch.compile(dynamic=False)` of the reference (what a PyTorch user
deploys), and a short sweep of the fused kernel's tiles (each variant checked before it is
timed, the sweep bounded in time). A graph holds CALLS calls rotating over INPUT_SETS input
sets whose weights together exceed L2, so every call reads its weights from HBM as the model's
layers do; roles' replays are interleaved; the figure is the median replay over CALLS.
`--device cpu --quick` runs the same code under the Triton interpreter at scaled-down sizes
(host clock, no graphs, no compile), to check the script itself.

Its answer: docs/benchmarks.md, "How to reproduce on the GPU".
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
import gated_gelu_projection_fused as fused  # noqa: E402
import solution_session  # noqa: E402
from operators.catalog.checking import scaled_down  # noqa: E402
from operators.catalog.gated_gelu_projection import DECLARATION  # noqa: E402

FORMER_ATOL, FORMER_RTOL_PER_ROUNDING = 2.0**-10, 2.0**-8  # the fixed BF16 rule it measured
from operators.declaration import DISTRIBUTIONS, OperatorDeclaration, Workload  # noqa: E402

CALLS = 24
INPUT_SETS = 6
"""Six sets of the two 8 MB weights: 100 MB, past the H200's L2."""
REPLAYS = 15
WARMUP = 2
SWEEP_SECONDS = 20.0
"""Compiling a variant takes about a second; a workload's variants past this are skipped."""
HBM_BYTES_PER_S = 4.26e12
"""The H200's measured copy bandwidth (issue 26), for the byte floor."""
TENSOR_FLOPS = 989e12
"""The H200's dense BF16 tensor-core peak, for the compute floor."""


def _settings(block_m, block_n, block_k, num_warps, num_stages) -> dict[str, int]:
    return {
        "block_m": block_m,
        "block_n": block_n,
        "block_k": block_k,
        "num_warps": num_warps,
        "num_stages": num_stages,
    }


VARIANTS = {
    "gemv": [
        _settings(*values)
        for values in (
            (16, 32, 128, 4, 4),
            (32, 32, 128, 4, 4),
            (16, 16, 256, 4, 3),
            (16, 64, 128, 4, 4),
            (64, 16, 128, 4, 4),
            (32, 32, 256, 4, 3),
            (64, 32, 64, 4, 5),
        )
    ],
    "rows512": [
        _settings(*values)
        for values in (
            (64, 128, 64, 8, 3),
            (128, 64, 64, 8, 3),
            (64, 128, 64, 4, 4),
            (64, 64, 64, 4, 4),
            (64, 64, 64, 4, 3),
            (128, 128, 64, 8, 3),
            (64, 64, 128, 4, 3),
            (128, 64, 64, 4, 4),
        )
    ],
    "rows1024": [
        _settings(*values)
        for values in (
            (128, 64, 64, 8, 3),
            (64, 128, 64, 4, 4),
            (128, 128, 64, 8, 3),
            (64, 64, 64, 4, 4),
            (128, 128, 64, 8, 4),
            (128, 64, 64, 4, 4),
            (64, 128, 64, 4, 3),
            (128, 64, 128, 8, 3),
        )
    ],
    "gemm": [
        _settings(*values)
        for values in (
            (128, 128, 64, 8, 4),
            (128, 64, 64, 8, 4),
            (256, 64, 64, 8, 3),
            (128, 64, 64, 8, 3),
            (128, 128, 64, 8, 3),
            (128, 64, 64, 4, 4),
            (64, 128, 64, 4, 4),
            (128, 64, 128, 8, 3),
        )
    ],
}
"""Tiles tried beside each regime's TUNING entry (block_n counts columns of each weight)."""


class Timing(BaseModel):
    """One role's CUDA-graph per-call time at one workload (host microseconds on the CPU)."""

    role: str
    settings: dict | None = None
    us: float | None = None
    problem: str | None = None


class WorkloadResult(BaseModel):
    workload: str
    tokens: int
    contract: str
    worst_steps: float
    """The fused kernel's largest error past atol, in BF16 steps of the reference (the
    contract allows its roundings)."""
    byte_floor_us: float
    compute_floor_us: float
    timings: list[Timing]


class Report(BaseModel):
    device: str
    torch: str
    triton: str
    session_current: bool
    tuning: dict
    contract_roundings: int
    seconds: float
    results: list[WorkloadResult]


def regime(tokens: int) -> str:
    """Which TUNING entry the fused kernel uses at this many tokens."""
    return fused.regime(tokens)


def variant_kernel(settings: dict[str, int]) -> Callable:
    def kernel(x, gate_weight, up_weight):
        return fused.launch_fused(x, gate_weight, up_weight, settings)

    return kernel


def check_contract(
    declaration: OperatorDeclaration, kernel: Callable, workload: Workload, device, seed: int = 1
) -> tuple[str | None, float]:
    """The first contract violation over every input distribution (or the error), and the
    worst error past atol in BF16 steps of the reference."""
    worst, problem = 0.0, None
    for distribution in DISTRIBUTIONS:
        inputs = declaration.make_inputs(workload, seed, distribution, device)
        try:
            got = kernel(*inputs)
        except Exception as error:  # a kernel that cannot run is reported
            return f"{distribution}: {graph_roles.error_line(error)}", worst
        expected = declaration.reference(*inputs)
        error = (got.double() - expected.double()).abs() - FORMER_ATOL
        steps = error.clamp_min(0) / (expected.double().abs() * FORMER_RTOL_PER_ROUNDING)
        worst = max(worst, float(steps.nan_to_num(0.0, posinf=0.0).max()))
        violation = declaration.contract.check("out", got, expected)
        if violation is not None and problem is None:
            problem = f"{distribution}: {violation.describe()}"
    return problem, worst


def graph_times(roles: dict[str, Callable], input_sets: list) -> dict:
    """Median per-call us of each role (or why it could not be timed): one graph of CALLS
    calls each, replays interleaved."""
    return graph_roles.graph_times(roles, input_sets, calls=CALLS, replays=REPLAYS, warmup=WARMUP)


def host_times(roles: dict[str, Callable], input_sets: list) -> dict[str, float]:
    """The CPU stand-in: host microseconds of one call of each role."""
    times = {}
    for name, function in roles.items():
        started = time.perf_counter()
        function(*input_sets[0])
        times[name] = (time.perf_counter() - started) * 1e6
    return times


def floors_us(declaration: OperatorDeclaration, workload: Workload) -> tuple[float, float]:
    """Microseconds to move the call's bytes at HBM bandwidth, and to do its FLOPs at peak."""
    sizes = declaration.axis_sizes(workload)
    tokens, hidden, columns = sizes["tokens"], sizes["hidden"], sizes["mlp"]
    moved = 2 * (tokens * hidden + 2 * columns * hidden + tokens * columns)
    flops = 2 * 2 * tokens * hidden * columns
    return moved / HBM_BYTES_PER_S * 1e6, flops / TENSOR_FLOPS * 1e6


def measure(
    declaration: OperatorDeclaration, workload: Workload, device, quick: bool, sweep: bool
) -> WorkloadResult:
    tokens = workload.axes["tokens"]
    problem, worst = check_contract(
        declaration, fused.gated_gelu_projection_kernel, workload, device
    )
    roles: dict[str, Callable] = {"production": declaration.preferred}
    if device.type == "cuda":
        roles["compiled"] = torch.compile(declaration.reference, dynamic=False)
    if problem is None:
        roles["fused"] = fused.gated_gelu_projection_kernel
    timings = {}
    variants = VARIANTS[regime(tokens)] if sweep and problem is None and not quick else []
    deadline = time.time() + SWEEP_SECONDS
    for number, variant in enumerate(variants):
        name = f"variant{number}"
        if time.time() > deadline:
            timings[name] = Timing(role=name, settings=variant, problem="skipped: sweep time")
            continue
        kernel = variant_kernel(variant)
        try:
            inputs = declaration.make_inputs(workload, 2, "normal", device)
            violation = declaration.contract.check(
                "out", kernel(*inputs), declaration.reference(*inputs)
            )
            violation = violation.describe() if violation is not None else None
        except Exception as error:  # a variant that cannot compile is reported
            violation = graph_roles.error_line(error)
        if violation is None:
            roles[name] = kernel
        else:
            timings[name] = Timing(role=name, settings=variant, problem=violation)
    input_sets = [
        declaration.make_inputs(workload, seed=seed, device=device) for seed in range(INPUT_SETS)
    ]
    timer = host_times if device.type == "cpu" else graph_times
    for name, figure in timer(roles, input_sets).items():
        settings = fused.TUNING[regime(tokens)] if name == "fused" else None
        if name.startswith("variant"):
            settings = variants[int(name.removeprefix("variant"))]
        timed = isinstance(figure, float)
        timings[name] = Timing(
            role=name,
            settings=settings,
            us=figure if timed else None,
            problem=None if timed else figure,
        )
    byte_floor, compute_floor = floors_us(declaration, workload)
    ordered = sorted(timings.values(), key=lambda t: (t.role.startswith("variant"), t.role))
    return WorkloadResult(
        workload=workload.name,
        tokens=tokens,
        contract=problem or "ok",
        worst_steps=round(worst, 2),
        byte_floor_us=round(byte_floor, 2),
        compute_floor_us=round(compute_floor, 2),
        timings=ordered,
    )


def _us(timing: Timing | None) -> str:
    return f"{timing.us:.2f}" if timing is not None and timing.us is not None else "-"


def _ratio(slow: Timing | None, fast: Timing | None) -> str:
    if slow is None or fast is None or slow.us is None or fast.us is None:
        return "-"
    return f"{slow.us / fast.us:.2f}x"


def table(results: list[WorkloadResult]) -> str:
    lines = [
        "| workload | tokens | production us | compiled us | fused us | best variant us | "
        "fused vs production | fused vs compiled | floor us (bytes, flops) | contract |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for result in results:
        by_role = {t.role: t for t in result.timings}
        timed = [t for t in result.timings if t.role.startswith("variant") and t.us is not None]
        best = min(timed, key=lambda t: t.us, default=None)
        best_text = f"{best.us:.2f} {best.settings}" if best else "-"
        production, compiled, new = (by_role.get(r) for r in ("production", "compiled", "fused"))
        lines.append(
            f"| {result.workload} | {result.tokens} | {_us(production)} | {_us(compiled)} | "
            f"{_us(new)} | {best_text} | {_ratio(production, new)} | {_ratio(compiled, new)} | "
            f"{result.byte_floor_us}, {result.compute_floor_us} | {result.contract} "
            f"(worst {result.worst_steps} steps) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes, no sweep")
    parser.add_argument("--no-sweep", action="store_true", help="time the TUNING tiles only")
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/gated_projection_gpu"))
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "gated_projection_gpu: no CUDA device here; use --device cpu --quick", file=sys.stderr
        )
        return 2
    if args.device == "cpu" and not args.quick:
        print("gated_projection_gpu: the interpreter needs --quick sizes", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    started = time.time()
    declaration = scaled_down(DECLARATION) if args.quick else DECLARATION
    session = solution_session.session_file("gated_gelu_projection")
    session_current = session.is_file() and (
        session.read_text()
        == solution_session.session_text("gated_gelu_projection", Path(fused.__file__))
    )
    if not session_current:
        print("gated_projection_gpu: the session is stale (kernels/solution_session.py)")
    results = []
    for workload in declaration.workloads:
        result = measure(declaration, workload, device, args.quick, not args.no_sweep)
        results.append(result)
        for timing in result.timings:
            figure = f"{timing.us:8.2f} us" if timing.us is not None else timing.problem
            print(f"  {result.workload} {timing.role:10s} {figure}  {timing.settings or ''}")
    report = Report(
        device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu (interpreter)",
        torch=torch.__version__,
        triton=__import__("triton").__version__,
        session_current=session_current,
        tuning=fused.TUNING,
        contract_roundings=declaration.contract.roundings,
        seconds=round(time.time() - started, 1),
        results=results,
    )
    print(table(results))
    print(f"{report.seconds} s (TUNING: {fused.TUNING})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gated_projection_gpu.json").write_text(report.model_dump_json(indent=2) + "\n")
    print(f"wrote {out / 'gated_projection_gpu.json'}")
    return 0 if all(result.contract == "ok" for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
