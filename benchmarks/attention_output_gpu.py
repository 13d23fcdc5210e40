"""attention_output on the H200: the fused kernel's tiles swept per row regime against production.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/attention_output_gpu.py
[--write]` (a few minutes; writes $OUT/attention_output_gpu.json and prints a table). Per
workload (50, 400, 576 and 4608 rows) every tile of the kernel's TUNING_SPACE is first held to
the operator's contract on the normal and large distributions, then timed as CUDA-graph per-call
time beside production (the copy into token layout and one `F.linear`, what the model ran
before) and `torch.compile(dynamic=False)` of the reference. A graph holds CALLS calls rotating
over INPUT_SETS input sets whose weights together exceed L2, as the model's layers read theirs
from HBM. Tiles are tried in the order of the space, the sweep bounded in time per workload.
`--write` puts each regime's fastest tile into benchmarks/attention_output_fused.py's TUNING
and rewrites the scripted session.
"""

import argparse
import itertools
import json
import os
import re
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))

import torch  # noqa: E402,I001

import attention_output_fused as fused  # noqa: E402
import projection_gpu  # noqa: E402
import solution_session  # noqa: E402
from operators.catalog.attention_output import DECLARATION, attention_output_kernel  # noqa: E402
from operators.catalog.checking import first_violation  # noqa: E402

INPUT_SETS = 16
"""Weights of 4 MB each: 16 sets are 64 MB, past the H200's 50 MB L2."""
SECONDS_PER_WORKLOAD = 40.0


def tiles() -> list[dict]:
    keys = list(fused.TUNING_SPACE)
    return [
        dict(zip(keys, values, strict=True))
        for values in itertools.product(*fused.TUNING_SPACE.values())
    ]


def tile_name(tile: dict) -> str:
    return "m{block_m}_n{block_n}_k{block_k}_w{num_warps}_s{num_stages}".format(**tile)


def sweep(workload, device) -> dict:
    """Production, compile and every tile that meets the contract, per-call us."""
    started = time.monotonic()
    sets = [DECLARATION.make_inputs(workload, seed, "normal", device) for seed in range(INPUT_SETS)]
    roles = {
        "production": attention_output_kernel,
        "compiled": torch.compile(DECLARATION.reference, dynamic=False),
    }
    refused = {}
    for tile in tiles():
        if time.monotonic() - started > SECONDS_PER_WORKLOAD:
            break
        kernel = lambda a, w, tile=tile: fused.project(a, w, tile)  # noqa: E731
        try:
            violation = next(
                (
                    v
                    for d in ("normal", "large")
                    if (v := first_violation(DECLARATION, kernel, workload, 0, d, device))
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
    times = projection_gpu.graph_times(roles, sets)
    timed = {name: value for name, value in times.items() if isinstance(value, float)}
    refused |= {name: value for name, value in times.items() if not isinstance(value, float)}
    candidates = {
        name: value for name, value in timed.items() if name not in ("production", "compiled")
    }
    best = min(candidates, key=candidates.get) if candidates else None
    return {
        "workload": workload.name,
        "rows": workload.axes["batch"] * workload.axes["tokens"],
        "regime": fused.regime(workload.axes["batch"] * workload.axes["tokens"]),
        "production_us": timed.get("production"),
        "compiled_us": timed.get("compiled"),
        "best": best,
        "best_us": candidates.get(best),
        "tiles_us": candidates,
        "refused": refused,
        "seconds": round(time.monotonic() - started, 1),
    }


def chosen_tuning(results: list[dict]) -> dict:
    """Each regime's fastest tile (the shipped one where nothing was timed)."""
    by_name = {tile_name(tile): tile for tile in tiles()}
    return {
        result["regime"]: by_name.get(result["best"], fused.TUNING[result["regime"]])
        for result in results
    }


def tuning_literal(tuning: dict) -> str:
    """TUNING as ruff formats it, one setting a line."""
    lines = ["TUNING = {"]
    for regime, tile in tuning.items():
        lines.append(f'    "{regime}": {{')
        lines += [f'        "{key}": {value!r},' for key, value in tile.items()]
        lines.append("    },")
    return "\n".join([*lines, "}"]) + "\n"


def write_tuning(tuning: dict) -> None:
    path = Path(fused.__file__)
    text = re.sub(
        r"^TUNING = \{\n.*?\n\}\n",
        tuning_literal(tuning),
        path.read_text(),
        count=1,
        flags=re.S | re.M,
    )
    path.write_text(text)
    solution_session.main(["attention_output", str(path)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the chosen TUNING and session")
    arguments = parser.parse_args(argv)
    device = torch.device("cuda")
    out = Path(os.environ.get("OUT", "/tmp"))
    results = []
    for workload in DECLARATION.workloads:
        result = sweep(workload, device)
        results.append(result)
        print(
            f"{result['workload']:>10} production {result['production_us']:.2f} us, compiled "
            f"{result['compiled_us']:.2f}, best {result['best']} {result['best_us']:.2f} "
            f"({len(result['tiles_us'])} tiles, {len(result['refused'])} refused, "
            f"{result['seconds']} s)",
            flush=True,
        )
        (out / "attention_output_gpu.json").write_text(json.dumps(results, indent=1))
    tuning = chosen_tuning(results)
    print(json.dumps(tuning, indent=1))
    if arguments.write:
        write_tuning(tuning)
        print(f"wrote TUNING into {fused.__file__} and its session", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
