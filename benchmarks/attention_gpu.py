"""split_kv_attention on the H200: the split-head-dimension kernel against production and SDPA.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/attention_gpu.py`
(about six minutes; writes $OUT/attention_gpu.json after every workload and prints a table).
Per attention workload it first holds the new kernel (kernels/split_kv_attention_split_dim.py,
the operator file the scripted tune session ships) to the operator's contract on every input
distribution, then times as CUDA-graph per-call time: the production kernel, the new kernel at
its TUNING, BF16 `scaled_dot_product_attention` over the concatenated K/V (GQA) as a PyTorch
user writes it, and a sweep of the workload's regime settings (each variant checked before it
is timed). A graph holds CALLS calls rotating over INPUT_SETS input sets (warm L2); roles'
replays are interleaved; the figure is the median replay over CALLS. The fastest variant per
regime is what `python kernels/attention_session.py --tuning-from attention_gpu.json`
writes into the kernel's TUNING. `--device cpu --quick` runs the same code under the Triton
interpreter at scaled-down sizes (host clock, no graphs, one variant), to check the script.

Its answer: docs/benchmarks.md, "Catalog kernels against eager and compile".
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
import torch.nn.functional as F  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import operators  # noqa: E402,F401  (selects the Triton interpreter before triton.language loads)
import graph_roles  # noqa: E402
import attention_session  # noqa: E402
import split_kv_attention_split_dim as split_dim  # noqa: E402
from operators.catalog.checking import first_violation, scaled_down  # noqa: E402
from operators.catalog.split_kv_attention import DECLARATION  # noqa: E402
from operators.declaration import DISTRIBUTIONS, OperatorDeclaration, Workload  # noqa: E402

CALLS = 48
INPUT_SETS = 4
REPLAYS = 25
WARMUP = 3
VARIANT_SEEDS = (1, 2, 3)
"""Seeds of the `large` and `cancellation` inputs each variant must pass before it is timed,
as many as the evaluator draws per workload."""
SWEEP_SECONDS = float(os.environ.get("SWEEP_SECONDS", "75"))
"""Compiling a variant takes seconds; a workload's variants past this much time are skipped
(the environment's SWEEP_SECONDS when set)."""


def _variants(points: list[tuple[int, ...]]) -> list[dict]:
    """Settings by name from (heads, queries, keys, dim_parts, score_chunks, num_warps,
    num_stages[, weight_parts[, key_splits]]); weight_parts is 2 and key_splits 1 unless
    given."""
    names = ("heads", "queries", "keys", "dim_parts", "score_chunks", "num_warps", "num_stages")
    optional = ("weight_parts", "key_splits")
    return [
        {"weight_parts": 2, "key_splits": 1, **dict(zip(names + optional, point, strict=False))}
        for point in points
    ]


SHORT_VARIANTS = _variants([
    (1, 64, 64, 2, 2, 4, 3, 2, 5), (8, 16, 64, 2, 2, 8, 3, 2, 2), (1, 64, 64, 2, 1, 4, 3, 1, 5),
    (8, 16, 64, 2, 1, 8, 3, 1, 2), (1, 16, 64, 4, 1, 4, 3, 1, 5), (8, 16, 64, 2, 1, 8, 3, 1),
    (8, 16, 64, 2, 2, 8, 3),
    (8, 16, 64, 2, 2, 8, 2), (8, 16, 32, 2, 2, 8, 3), (4, 16, 64, 2, 2, 8, 3),
    (4, 16, 64, 2, 2, 4, 3), (2, 32, 64, 2, 2, 4, 3), (8, 16, 64, 4, 2, 8, 3),
    (1, 16, 64, 4, 2, 4, 3), (1, 64, 64, 2, 2, 4, 3), (1, 16, 64, 4, 2, 4, 3, 3),
    (1, 16, 64, 4, 2, 4, 3, 2, 2), (1, 16, 64, 4, 2, 4, 3, 2, 5), (1, 16, 64, 4, 2, 4, 2, 2, 10),
    (1, 16, 64, 2, 2, 4, 3, 2, 5), (1, 32, 64, 2, 2, 4, 3, 2, 5), (1, 64, 64, 2, 2, 4, 2, 2, 10),
    (2, 16, 64, 2, 2, 4, 3, 2, 5), (2, 32, 64, 2, 2, 4, 3, 2, 5),
    (4, 16, 64, 2, 2, 4, 3, 2, 5), (4, 16, 64, 4, 2, 4, 3, 2, 5), (8, 16, 64, 2, 2, 8, 3, 2, 5),
    (8, 16, 64, 4, 2, 8, 2, 2, 10), (1, 16, 32, 4, 2, 4, 3, 2, 10), (1, 16, 128, 4, 2, 4, 3, 2, 5),
    (2, 16, 64, 4, 2, 4, 3, 2, 10), (1, 64, 64, 2, 2, 4, 3, 2, 2), (1, 64, 64, 2, 2, 4, 3, 2, 3),
    (1, 64, 64, 2, 2, 4, 3, 2, 4), (1, 64, 64, 4, 2, 4, 3, 2, 2), (2, 32, 64, 2, 2, 4, 3, 2, 2),
    (4, 16, 64, 2, 2, 4, 3, 2, 2), (1, 32, 64, 2, 2, 4, 3, 2, 3),
    (8, 16, 64, 1, 1, 8, 2, 1, 2), (8, 16, 64, 1, 1, 8, 2, 1, 3), (8, 16, 64, 1, 1, 8, 2, 1, 4),
    (8, 16, 32, 1, 1, 8, 3, 1, 2), (4, 32, 64, 1, 1, 8, 2, 1, 2), (8, 8, 64, 1, 1, 4, 2, 1, 2),
    (8, 16, 64, 1, 1, 8, 2, 1, 5), (8, 16, 64, 1, 1, 8, 2, 1, 8), (8, 16, 32, 1, 1, 8, 2, 1, 4),
    (8, 16, 64, 1, 1, 4, 2, 1, 4), (4, 16, 64, 1, 1, 4, 2, 1, 4), (8, 16, 64, 1, 1, 8, 3, 1, 4),
    (8, 16, 64, 1, 1, 8, 1, 1, 4), (2, 32, 64, 1, 1, 4, 2, 1, 4), (8, 16, 64, 2, 1, 8, 3, 1, 4),
])  # fmt: skip
"""Settings (in `_variants`' order) tried for the action calls (50 tokens): the shipped ones,
stock's single rounding (scores in one product, the weights in one BF16 part, within the
contract "no less accurate than stock"), the eight query heads of a key head in one program
without runs of keys (batch 8 fills the GPU without them), then the keys in 2 to 10 runs joined
by a second launch, over query heads per program, output parts and query blocks; last, the
whole head dimension in one program with stock's numerics (each score computed once, where two
output parts compute it twice), 2 to 8 runs of keys (from index 38; on an H100 none beat the
shipped two output parts, docs/benchmarks.md)."""
LONG_VARIANTS = _variants([
    (1, 128, 64, 2, 2, 8, 3), (1, 64, 32, 2, 2, 4, 3), (1, 128, 64, 2, 1, 8, 3, 1),
    (1, 128, 64, 1, 1, 8, 3, 1), (1, 128, 64, 1, 1, 8, 2, 1), (2, 64, 64, 1, 1, 8, 3, 1),
    (1, 128, 32, 1, 1, 8, 3, 1),
    (1, 64, 32, 2, 1, 4, 3, 1), (1, 64, 64, 2, 1, 4, 3, 1), (2, 64, 64, 2, 1, 8, 3, 1),
    (1, 128, 32, 2, 1, 8, 2, 1), (1, 64, 64, 1, 1, 8, 2, 1), (2, 64, 64, 2, 2, 8, 3),
    (2, 64, 32, 2, 2, 8, 3), (1, 64, 64, 2, 2, 4, 2), (1, 128, 64, 2, 2, 8, 3, 2, 2),
    (1, 128, 64, 2, 2, 8, 3, 2, 3), (1, 64, 32, 2, 2, 4, 3, 2, 2), (1, 64, 64, 2, 2, 4, 3, 2, 2),
    (1, 128, 32, 2, 2, 8, 3, 2, 2), (1, 64, 32, 2, 2, 4, 3, 2, 3),
    (2, 64, 64, 1, 1, 8, 2, 1), (4, 32, 64, 1, 1, 8, 2, 1), (2, 64, 32, 1, 1, 8, 3, 1),
    (2, 64, 32, 1, 1, 8, 2, 1), (1, 128, 32, 1, 1, 8, 2, 1), (8, 16, 64, 1, 1, 8, 2, 1),
    (1, 64, 32, 1, 1, 4, 2, 1), (1, 64, 64, 1, 1, 4, 2, 1), (2, 64, 128, 1, 1, 8, 1, 1),
])  # fmt: skip
"""The same for the prefix calls (576 tokens): the shipped settings of both batches, stock's
single rounding, then the whole head dimension in one program (with two output parts every
program computes its scores again: 1.5x the FLOPs, and prefix_b8's fastest variant ran at
SDPA's FLOP rate), two query heads per program (their keys and values loaded once), then runs of
keys, which give the 80 programs of a batch-1 call more of the GPU; last, the whole head
dimension with 2 to 8 query heads a program (576 queries in full blocks of 128 rows, where 128
queries of one head leave the fifth block half empty) and one warpgroup over 64 rows."""


class Timing(BaseModel):
    """One role's CUDA-graph per-call time at one workload (host seconds on the CPU)."""

    role: str
    settings: dict | None = None
    us: float | None = None
    problem: str | None = None


class WorkloadResult(BaseModel):
    workload: str
    regime: str
    axes: dict[str, int]
    contract: str
    timings: list[Timing]


class Report(BaseModel):
    device: str
    torch: str
    triton: str
    session_current: bool
    tuning: dict
    seconds: float
    results: list[WorkloadResult]


def sdpa(q, k_cache, v_cache, k, v, scale: float) -> torch.Tensor:
    """What a PyTorch user writes: BF16 SDPA over the joined keys and values, grouped-query."""
    keys = torch.cat((k_cache, k), dim=2)
    values = torch.cat((v_cache, v), dim=2)
    return F.scaled_dot_product_attention(q, keys, values, scale=scale, enable_gqa=True)


def variant_kernel(settings: dict) -> Callable:
    def kernel(q, k_cache, v_cache, k, v, scale: float) -> torch.Tensor:
        return split_dim.attend(q, k_cache, v_cache, k, v, scale, settings)

    return kernel


def contract_problem(
    declaration: OperatorDeclaration, kernel: Callable, workload: Workload, device
) -> str | None:
    """The first contract violation over every input distribution (or the error), or None."""
    for distribution in DISTRIBUTIONS:
        try:
            violation = first_violation(declaration, kernel, workload, 1, distribution, device)
        except Exception as error:  # a kernel that cannot run is reported
            return f"{distribution}: {graph_roles.error_line(error)}"
        if violation is not None:
            return f"{distribution}: {violation.describe()}"
    return None


def graph_times(roles: dict[str, Callable], input_sets: list, scale: float) -> dict:
    """Median per-call us of each role (or why it could not be timed): one graph of CALLS
    calls each, replays interleaved."""
    return graph_roles.graph_times(
        roles, input_sets, scale, calls=CALLS, replays=REPLAYS, warmup=WARMUP
    )


def host_times(roles: dict[str, Callable], input_sets: list, scale: float) -> dict[str, float]:
    """The CPU stand-in: host microseconds of one call of each role."""
    times = {}
    for name, function in roles.items():
        started = time.perf_counter()
        function(*input_sets[0], scale)
        times[name] = (time.perf_counter() - started) * 1e6
    return times


def measure(
    declaration: OperatorDeclaration,
    workload: Workload,
    device,
    quick: bool,
    deadline: float,
    first_variant: int = 0,
) -> WorkloadResult:
    """The workload's roles and its regime's variants from `first_variant` on, or the last
    -`first_variant` when negative (those before are skipped without compiling, so a call can
    time settings added at a list's end; the kernel at its TUNING, `new`, is timed all the
    same)."""
    scale = declaration.params["scale"]
    tokens, batch = workload.axes["tokens"], workload.axes["batch"]
    regime = split_dim.regime(batch, tokens)
    default = split_dim.regime_settings(split_dim.TUNING, batch, tokens)
    problem = contract_problem(declaration, split_dim.split_kv_attention_triton, workload, device)
    roles: dict[str, Callable] = {"production": declaration.preferred, "sdpa": sdpa}
    timings = {}
    if problem is None:
        roles["new"] = split_dim.split_kv_attention_triton
    variants = SHORT_VARIANTS if tokens <= 64 else LONG_VARIANTS  # each checked on its own
    if quick:
        variants = [{**split_dim.INTERPRETED, "heads": 2, "dim_parts": 2, "score_chunks": 2}]
    # the interpreter's one variant always runs; a negative start counts from the list's end
    start = 0 if quick else first_variant if first_variant >= 0 else len(variants) + first_variant
    start = max(0, start)
    for number, variant in enumerate(variants[start:], start):
        name = f"variant{number}"
        if time.time() > deadline:
            timings[name] = Timing(role=name, settings=variant, problem="skipped: sweep time")
            continue
        kernel = variant_kernel(variant)
        try:
            violation = next(
                (
                    found
                    for seed in VARIANT_SEEDS
                    for distribution in ("large", "cancellation")
                    if (
                        found := first_violation(
                            declaration, kernel, workload, seed, distribution, device
                        )
                    )
                ),
                None,
            )
        except Exception as error:  # a variant that cannot compile is reported
            violation = graph_roles.error_line(error)
        if violation is None:
            roles[name] = kernel
        else:
            text = violation if isinstance(violation, str) else violation.describe()
            timings[name] = Timing(role=name, settings=variant, problem=text)
    input_sets = [
        declaration.make_inputs(workload, seed=seed, device=device) for seed in range(INPUT_SETS)
    ]
    timer = host_times if device.type == "cpu" else graph_times
    for name, figure in timer(roles, input_sets, scale).items():
        settings = default if name == "new" else None
        if name.startswith("variant"):
            settings = variants[int(name.removeprefix("variant"))]
        timed = isinstance(figure, float)
        timings[name] = Timing(
            role=name,
            settings=settings,
            us=figure if timed else None,
            problem=None if timed else figure,
        )
    ordered = sorted(timings.values(), key=lambda t: (t.role.startswith("variant"), t.role))
    return WorkloadResult(
        workload=workload.name,
        regime=regime,
        axes=workload.axes,
        contract=problem or "ok",
        timings=ordered,
    )


def _us(timing: Timing | None) -> str:
    return f"{timing.us:.2f}" if timing is not None and timing.us is not None else "-"


def table(results: list[WorkloadResult]) -> str:
    lines = [
        "| workload | production us | new us | best variant us | SDPA us | contract |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for result in results:
        by_role = {t.role: t for t in result.timings}
        timed = [t for t in result.timings if t.role.startswith("variant") and t.us is not None]
        best = min(timed, key=lambda t: t.us, default=None)

        best_text = f"{best.us:.2f} {best.settings}" if best else "-"
        production, new, sdpa_us = (
            _us(by_role.get(role)) for role in ("production", "new", "sdpa")
        )
        lines.append(
            f"| {result.workload} | {production} | {new} | {best_text} | {sdpa_us} | "
            f"{result.contract} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes, one variant")
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/attention_gpu"))
    parser.add_argument(
        "--workloads",
        default=os.environ.get("ATTENTION_WORKLOADS", ""),
        help="comma-separated workload names to sweep (default: every workload)",
    )
    parser.add_argument(
        "--first-variant",
        type=int,
        default=os.environ.get("ATTENTION_FIRST_VARIANT", "0"),  # a string: argparse converts it
        help="skip the variants before this index, or time the last N of each list with -N "
        "(default: ATTENTION_FIRST_VARIANT, else 0)",
    )
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("attention_gpu: no CUDA device here; use --device cpu --quick", file=sys.stderr)
        return 2
    if args.device == "cpu" and not args.quick:
        print("attention_gpu: the interpreter needs --quick sizes", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    started = time.time()
    declaration = scaled_down(DECLARATION) if args.quick else DECLARATION
    session_current = attention_session.SESSION_FILE.is_file() and (
        attention_session.SESSION_FILE.read_text() == attention_session.session_text()
    )
    if not session_current:
        print("attention_gpu: the session file is stale (python kernels/attention_session.py)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    names = [name for name in args.workloads.split(",") if name]
    known = [workload.name for workload in declaration.workloads]
    unknown = sorted(set(names) - set(known))
    if unknown:
        print(
            f"attention_gpu: unknown workload {unknown[0]!r}; known: {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    for workload in declaration.workloads:
        if names and workload.name not in names:
            continue
        deadline = time.time() + SWEEP_SECONDS
        result = measure(declaration, workload, device, args.quick, deadline, args.first_variant)
        results.append(result)
        for timing in result.timings:
            figure = f"{timing.us:8.2f} us" if timing.us is not None else timing.problem
            print(f"  {result.workload} {timing.role:10s} {figure}  {timing.settings or ''}")
        report = Report(
            device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu (interpreter)",
            torch=torch.__version__,
            triton=__import__("triton").__version__,
            session_current=session_current,
            tuning=split_dim.TUNING,
            seconds=round(time.time() - started, 1),
            results=results,
        )  # written after every workload: a run cut short keeps what it measured
        (out / "attention_gpu.json").write_text(report.model_dump_json(indent=2) + "\n")
    print(table(results))
    print(f"{report.seconds} s; wrote {out / 'attention_gpu.json'}")
    return 0 if all(result.contract == "ok" for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
