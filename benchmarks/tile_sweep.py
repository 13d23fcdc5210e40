"""A fused projection kernel's tiles swept per row regime on the GPU, against production.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/tile_sweep.py OP
[--write]` for an OP of SWEPT (a few minutes; writes $OUT/tile_sweep_OP.json and prints a
table). Per workload of the operator, every tile of the kernel module's TUNING_SPACE is first
held to the operator's contract on the normal and large distributions, then timed as CUDA-graph
per-call time beside production (what the model ran before) and `torch.compile(dynamic=False)`
of the reference. A graph holds CALLS calls rotating over INPUT_SETS input sets whose weights
together exceed L2, as the model's layers read theirs from HBM. Tiles are tried in the order of
the space, the sweep bounded in time per workload. Each regime gets the tile with the least
model time over its workloads (per-call time x calls per forward). `--write` puts those tiles
into the kernel module's TUNING, rewrites its scripted tune session and leaves a copy of the
module as $OUT/OP.kernel.py.txt. `--module NAME` sweeps another kernel module of the operator
(a new kernel before it ships; the session is then written from it) and `--incumbent NAME`
times a module at its own TUNING in the same graphs, so a new kernel is compared with the one
it would replace in one run.

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))
KERNELS = BENCHMARKS.parent / "kernels"
sys.path.insert(0, str(KERNELS))  # the kernels that ship

import torch  # noqa: E402,I001

import graph_roles  # noqa: E402
import solution_session  # noqa: E402
from operators import REGISTRY  # noqa: E402
from operators.catalog.checking import first_violation  # noqa: E402

INPUT_SETS = 16
"""The weights are 4-5 MB each (rotate_qk's largest workload moves 42 MB a call): 16 sets are
past the H200's 50 MB L2."""
SECONDS_PER_WORKLOAD = float(os.environ.get("TILE_SECONDS", "45"))
"""How long one workload's tiles may take to check and compile (`TILE_SECONDS`)."""


@dataclass(frozen=True)
class Swept:
    """How the sweep reaches one kernel module: its entry point, called as the operator is
    (how an incumbent module runs at its own TUNING), and how it launches at a given tile (by
    default the entry point with the tile in every regime of TUNING for the call)."""

    module: str
    entry: str
    launch: Callable[[ModuleType, dict, tuple, dict], object] | None = None

    def launch_at(self, fused: ModuleType, tile: dict, args: tuple, params: dict):
        if self.launch is not None:
            return self.launch(fused, tile, args, params)
        return graph_roles.call_with_settings(fused, self.entry, tile, *args, **params)


SWEPT = {
    "attention_output": Swept(
        module="attention_output_fused",
        entry="attention_output_kernel",
        launch=lambda fused, tile, args, params: fused.project(*args, tile, **params),
    ),
    "gated_down_projection": Swept(
        module="gated_down_projection_fused",
        entry="gated_down_projection_kernel",
        launch=lambda fused, tile, args, params: fused.project(*args, tile),
    ),
    "gated_gelu_projection": Swept(
        module="gated_gelu_projection_fused",
        entry="gated_gelu_projection_kernel",
        launch=lambda fused, tile, args, params: fused.launch_fused(*args, tile),
    ),
    "qkv_projection": Swept(module="qkv_projection_fused", entry="qkv_projection_kernel"),
    "rotate_qk": Swept(module="rotate_qk_halves", entry="rotate_qk_triton"),
}
"""Every swept module also defines `regime(rows)`, the TUNING key of a call (`module_problem`
refuses one that does not)."""


FIXED_ROLES = ("production", "compiled", "incumbent")
"""Roles timed beside the tiles, never chosen."""


def tiles(space: dict) -> list[dict]:
    return [dict(zip(space, values, strict=True)) for values in itertools.product(*space.values())]


def tile_name(tile: dict) -> str:
    if "block_m" not in tile:  # launch settings without tiles (a row-wise kernel)
        return "_".join(f"{key}{value}" for key, value in tile.items())
    name = "m{block_m}_n{block_n}_k{block_k}_w{num_warps}_s{num_stages}".format(**tile)
    name += f"_p{tile['splits']}" if "splits" in tile else ""
    return name + ("_joined" if tile.get("joined") else "")


def rows_of(workload) -> int:
    return workload.axes.get("batch", 1) * workload.axes["tokens"]


def candidate(operator: str, fused: ModuleType, tile: dict) -> Callable:
    """The kernel module at one tile, called as the operator is (inputs, then its params)."""
    swept = SWEPT[operator]

    def kernel(*args, **params):
        return swept.launch_at(fused, tile, args, params)

    return kernel


def sweep(
    operator: str, fused: ModuleType, workload, device, incumbent: ModuleType | None = None
) -> dict:
    """Production, compile, the incumbent kernel module at its own TUNING (when given) and
    every tile that meets the contract, per-call us."""
    declaration = REGISTRY.declaration(operator)
    started = time.monotonic()
    sets = [declaration.make_inputs(workload, seed, "normal", device) for seed in range(INPUT_SETS)]
    roles = {
        "production": declaration.preferred,
        "compiled": torch.compile(declaration.reference, dynamic=False),
    }
    if incumbent is not None:
        roles["incumbent"] = getattr(incumbent, SWEPT[operator].entry)
    refused = {}
    for tile in tiles(fused.TUNING_SPACE):
        if time.monotonic() - started > SECONDS_PER_WORKLOAD:
            break

        kernel = candidate(operator, fused, tile)
        try:
            violation = next(
                (
                    found
                    for distribution in ("normal", "large")
                    if (
                        found := first_violation(
                            declaration, kernel, workload, 0, distribution, device
                        )
                    )
                ),
                None,
            )
        except Exception as error:  # a tile that does not compile is skipped, with its reason
            refused[tile_name(tile)] = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
            continue
        if violation is not None:
            refused[tile_name(tile)] = violation.describe()[:160]
            continue
        roles[tile_name(tile)] = kernel
    times = graph_roles.graph_times(roles, sets)
    timed = {name: value for name, value in times.items() if isinstance(value, float)}
    refused |= {name: value for name, value in times.items() if not isinstance(value, float)}
    candidates = {k: v for k, v in timed.items() if k not in FIXED_ROLES}
    best = min(candidates, key=candidates.get) if candidates else None
    return {
        "workload": workload.name,
        "rows": rows_of(workload),
        "regime": fused.regime(rows_of(workload)),
        "calls_per_forward": workload.calls_per_forward,
        "production_us": timed.get("production"),
        "compiled_us": timed.get("compiled"),
        "incumbent": incumbent.__name__ if incumbent is not None else None,
        "incumbent_us": timed.get("incumbent"),
        "best": best,
        "best_us": candidates.get(best),
        "tiles_us": candidates,
        "refused": refused,
        "seconds": round(time.monotonic() - started, 1),
    }


def chosen_tuning(fused: ModuleType, results: list[dict]) -> dict:
    """Per regime the tile with the least model time over the regime's workloads, among tiles
    timed at all of them (the shipped tile where none was)."""
    by_name = {tile_name(tile): tile for tile in tiles(fused.TUNING_SPACE)}
    tuning = {name: dict(tile) for name, tile in fused.TUNING.items()}
    for regime in tuning:
        mine = [result for result in results if result["regime"] == regime]
        common = set(by_name)
        for result in mine:
            common &= set(result["tiles_us"])
        if not mine or not common:
            continue

        def model_time(name: str, mine=mine) -> float:
            return sum(r["tiles_us"][name] * (r["calls_per_forward"] or 1) for r in mine)

        tuning[regime] = dict(by_name[min(sorted(common), key=model_time)])
    return tuning


def write_tuning(operator: str, fused: ModuleType, tuning: dict) -> None:
    """The chosen tiles into the kernel module's TUNING, and its scripted session anew."""
    solution_session.write_tuning(operator, Path(fused.__file__), tuning)


def module_problem(name: str, entry: str) -> str | None:
    """Why `name` cannot be swept or timed as a kernel module of the operator, or None."""
    folder = KERNELS if (KERNELS / f"{name}.py").is_file() else BENCHMARKS
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or not (folder / f"{name}.py").is_file():
        fitting = [path.stem for path in sorted(KERNELS.glob("*.py")) if not _lacks(path, entry)]
        return f"no such module; the kernel modules with {entry} are {', '.join(fitting)}"
    missing = _lacks(folder / f"{name}.py", entry)
    if missing:
        return f"it lacks {', '.join(missing)} (a kernel module defines all four)"
    return None


def _lacks(path: Path, entry: str) -> list[str]:
    """What of a swept module's top-level names the file at `path` does not define."""
    source = path.read_text()
    wanted = ("TUNING", "TUNING_SPACE", "def regime", f"def {entry}")
    return [part for part in wanted if not re.search(rf"^{part}\b", source, flags=re.M)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("operator", choices=sorted(SWEPT))
    parser.add_argument("--write", action="store_true", help="write the chosen TUNING and session")
    parser.add_argument(
        "--workloads",
        help="comma-separated workload names to sweep (default: all); the other regimes keep "
        "their tiles",
    )
    parser.add_argument(
        "--module",
        help="the kernel module under benchmarks/ to sweep (default: the operator's shipped one; "
        "it must define TUNING, TUNING_SPACE, regime and the operator's entry point)",
    )
    parser.add_argument(
        "--incumbent",
        help="a kernel module under benchmarks/ timed at its own TUNING beside the tiles, in the "
        "same graphs (the kernel a new module would replace)",
    )
    arguments = parser.parse_args(argv)
    swept = SWEPT[arguments.operator]
    module = arguments.module or swept.module
    for option, name in (("--module", module), ("--incumbent", arguments.incumbent)):
        problem = name and module_problem(name, swept.entry)
        if problem:
            print(f"tile_sweep: {option} {name}: {problem}", file=sys.stderr)
            return 2
    workloads = REGISTRY.declaration(arguments.operator).workloads
    if arguments.workloads:
        wanted = arguments.workloads.split(",")
        unknown = sorted(set(wanted) - {workload.name for workload in workloads})
        if unknown:
            names = ", ".join(workload.name for workload in workloads)
            print(
                f"tile_sweep: no workload {', '.join(unknown)}; there are {names}", file=sys.stderr
            )
            return 2
        workloads = tuple(workload for workload in workloads if workload.name in wanted)
    if not torch.cuda.is_available():
        print("tile_sweep: needs a CUDA device (it times CUDA graphs)", file=sys.stderr)
        return 2
    fused = __import__(module)
    incumbent = __import__(arguments.incumbent) if arguments.incumbent else None
    device = torch.device("cuda")
    report = Path(os.environ.get("OUT", "/tmp")) / f"tile_sweep_{arguments.operator}.json"
    results = []
    for workload in workloads:
        result = sweep(arguments.operator, fused, workload, device, incumbent)
        results.append(result)
        beside = f", incumbent {result['incumbent_us']:.2f}" if incumbent is not None else ""
        print(
            f"{result['workload']:>10} ({result['regime']}): production "
            f"{result['production_us']:.2f} us, compiled {result['compiled_us']:.2f}{beside}, best "
            f"{result['best']} {result['best_us'] or float('nan'):.2f} ({len(result['tiles_us'])} "
            f"tiles, {len(result['refused'])} refused, {result['seconds']} s)",
            flush=True,
        )
        report.write_text(json.dumps(results, indent=1))
    tuning = chosen_tuning(fused, results)
    print(json.dumps(tuning, indent=1))
    if arguments.write:
        write_tuning(arguments.operator, fused, tuning)
        kept = report.with_name(f"{arguments.operator}.kernel.py.txt")  # what a device call returns
        kept.write_text(Path(fused.__file__).read_text())
        print(f"wrote TUNING into {fused.__file__} and its session (a copy: {kept})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
