"""How close a Triton matrix product gets to cuBLAS at the action expert's 400 rows.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/gemm_probe.py`
(about a minute; writes $OUT/gemm_probe.json after every shape and prints a line per tile).
The batch-8 account puts most of the gap to the 1.5x goal in products of 400 rows, where our
pointer-loading Triton kernels run at 40-60% of cuBLAS's throughput. This times C = A W^T at the
shapes of those products three ways: `F.linear` (cuBLAS), a Triton kernel that loads its tiles
through pointers (as the shipped kernels do), and one that loads them through tensor
descriptors (TMA on Hopper), each at a few tiles. CUDA-graph per-call time over WEIGHT_SETS
weights (`graph_roles.graph_times`, roles' replays interleaved), so the weights stream from
HBM as the model's layers do. Every Triton result is held to the BLAS result first, under a
two-rounding tolerance contract (FP32 sums in another order). `--quick` runs
one small shape under the Triton interpreter, to check the script itself.

Its answer: docs/benchmarks.md, "The model end to end".
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))  # the kernels that ship

import torch  # noqa: E402,I001
import torch.nn.functional as F  # noqa: E402

from operators import triton_runtime  # noqa: E402  (selects the interpreter before any kernel)
from operators.contract import Contract  # noqa: E402
import graph_roles  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

SHAPES = {
    "qkv_projection": (400, 3072, 1024),
    "gate_and_up": (400, 8192, 1024),
    "mlp_down": (400, 1024, 4096),
    "attention_output": (400, 1024, 2048),
}
"""(rows, output columns, features) of the products at batch 8's action calls."""
TILES = (
    {"block_m": 64, "block_n": 64, "block_k": 64, "num_warps": 4, "num_stages": 4},
    {"block_m": 128, "block_n": 64, "block_k": 64, "num_warps": 4, "num_stages": 4},
    {"block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3},
    {"block_m": 128, "block_n": 256, "block_k": 64, "num_warps": 8, "num_stages": 3},
)
QUICK_TILE = {"block_m": 32, "block_n": 32, "block_k": 32, "num_warps": 1, "num_stages": 1}
WEIGHT_SETS = 8
AGREEMENT = Contract(
    mode="no_less_accurate",
    roundings=2,
    reason="FP32 sums in another order than the BLAS library's",
)


@triton.jit
def _pointer_product(
    a_ptr, w_ptr, c_ptr, rows, columns, features, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    column = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, features, BLOCK_K):
        a = tl.load(a_ptr + row[:, None] * features + start + depth[None, :],
                    mask=row[:, None] < rows, other=0.0)  # fmt: skip
        w = tl.load(w_ptr + column[:, None] * features + start + depth[None, :])
        if UPCAST:  # the interpreter's dot has no BF16
            a, w = a.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(a, tl.trans(w), acc)
    keep = (row[:, None] < rows) & (column[None, :] < columns)
    tl.store(c_ptr + row[:, None] * columns + column[None, :], acc.to(tl.bfloat16), mask=keep)


@triton.jit
def _descriptor_product(
    a_desc, w_desc, c_desc, features, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    first_row = tl.program_id(0) * BLOCK_M
    first_column = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, features, BLOCK_K):
        a = a_desc.load([first_row, start])  # rows past the end read as zeros
        w = w_desc.load([first_column, start])
        if UPCAST:
            a, w = a.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(a, tl.trans(w), acc)
    c_desc.store([first_row, first_column], acc.to(tl.bfloat16))  # rows past the end dropped


def pointer_product(a: torch.Tensor, w: torch.Tensor, tile: dict) -> torch.Tensor:
    rows, features = a.shape
    columns = w.shape[0]
    c = torch.empty((rows, columns), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(rows, tile["block_m"]), triton.cdiv(columns, tile["block_n"]))
    _pointer_product[grid](
        a, w, c, rows, columns, features, UPCAST=triton_runtime.interpreting(),
        BLOCK_M=tile["block_m"], BLOCK_N=tile["block_n"], BLOCK_K=tile["block_k"],
        num_warps=tile["num_warps"], num_stages=tile["num_stages"],
    )  # fmt: skip
    return c


def descriptor_product(a: torch.Tensor, w: torch.Tensor, tile: dict) -> torch.Tensor:
    rows, features = a.shape
    columns = w.shape[0]
    c = torch.empty((rows, columns), dtype=a.dtype, device=a.device)
    m, n, k = tile["block_m"], tile["block_n"], tile["block_k"]
    grid = (triton.cdiv(rows, m), triton.cdiv(columns, n))
    _descriptor_product[grid](
        TensorDescriptor.from_tensor(a, [m, k]), TensorDescriptor.from_tensor(w, [n, k]),
        TensorDescriptor.from_tensor(c, [m, n]), features, UPCAST=triton_runtime.interpreting(),
        BLOCK_M=m, BLOCK_N=n, BLOCK_K=k,
        num_warps=tile["num_warps"], num_stages=tile["num_stages"],
    )  # fmt: skip
    return c


KERNELS = {"pointer": pointer_product, "descriptor": descriptor_product}


def tile_name(tile: dict) -> str:
    return "m{block_m}_n{block_n}_k{block_k}_w{num_warps}_s{num_stages}".format(**tile)


def agrees(got: torch.Tensor, blas: torch.Tensor) -> bool:
    """Within two BF16 roundings of the BLAS result (the operators' tolerance contract)."""
    return AGREEMENT.check("C", got, blas) is None


def probe(name: str, shape: tuple[int, int, int], tiles, device, timed: bool) -> dict:
    rows, columns, features = shape
    generator = torch.Generator(device="cpu").manual_seed(0)

    def draw(*size):
        return torch.randn(*size, generator=generator).to(torch.bfloat16).to(device)

    sets = [(draw(rows, features), draw(columns, features) * 0.03) for _ in range(WEIGHT_SETS)]
    blas = F.linear(*sets[0])
    result = {"shape": list(shape), "gflop": 2 * rows * columns * features / 1e9, "us": {}}
    roles = {"cublas": F.linear}
    for kernel_name, kernel in KERNELS.items():
        for tile in tiles:
            label = f"{kernel_name}_{tile_name(tile)}"
            try:
                if agrees(kernel(*sets[0], tile), blas):
                    roles[label] = lambda a, w, t=tile, k=kernel: k(a, w, t)
                    result["us"][label] = "agrees (not timed)"
                else:
                    result["us"][label] = "disagrees with the BLAS result"
            except Exception as error:  # a tile that does not compile or fit is reported
                result["us"][label] = f"{type(error).__name__}: {str(error).splitlines()[0][:100]}"
    if timed:
        result["us"].update(graph_roles.graph_times(roles, sets))
    for label, value in result["us"].items():
        print(f"{name} {label}: {value}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small shape, interpreter")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp")))
    args = parser.parse_args(argv)
    if not args.quick and not torch.cuda.is_available():
        print("gemm_probe: needs a CUDA device (or --quick under the interpreter)", file=sys.stderr)
        return 2
    device = torch.device("cpu" if args.quick else "cuda")
    shapes = {"small": (40, 64, 96)} if args.quick else SHAPES
    tiles = (QUICK_TILE,) if args.quick else TILES
    report = {"device": "cpu" if args.quick else torch.cuda.get_device_name(), "shapes": {}}
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, shape in shapes.items():
        report["shapes"][name] = probe(name, shape, tiles, device, timed=not args.quick)
        report["seconds"] = round(time.monotonic() - started, 1)
        (args.out / "gemm_probe.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out / 'gemm_probe.json'} in {report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
