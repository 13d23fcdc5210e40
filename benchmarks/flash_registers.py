"""Registers and spills of the flash `split_kv_attention` kernel per launch setting, offline.

No GPU needed: each setting is compiled for sm_90a (the H200) by the installed Triton, and the
PTX is assembled by the `ptxas` Triton ships (`ptxas-blackwell` where the plain one is older
than the PTX), whose `-v` report gives registers per thread and bytes spilled. Spilling is what
made the first H200 figures of this kernel slow, and it is cheap to check before spending
device time. The figures come from the Triton installed here, which may differ from the
GPU machine's. Run from the repository root: `python benchmarks/flash_registers.py` (about 2 s
per setting); `--settings 32x32x4x2,64x32x8x2` picks rows x keys x warps x stages, `--json`
prints [rows, keys, warps, stages, registers, spill bytes] per setting.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile the kernels, even on a machine without a GPU
BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))

import triton  # noqa: E402
from split_kv_attention_flash import kernels  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

SETTINGS = ((32, 32, 4, 2), (32, 16, 4, 2), (32, 32, 8, 2), (64, 32, 8, 2), (64, 64, 4, 2))
"""(rows, keys, warps, stages) checked by default."""
BF16_POINTERS = ("q_ptr", "k_cache_ptr", "v_cache_ptr", "k_ptr", "v_ptr", "out_ptr")
FP32_POINTERS = ("partial_ptr", "partial_max_ptr", "partial_sum_ptr")
INTEGERS = (
    "query_heads", "kv_heads", "tokens", "prefix", "head_dim", "q_batch_stride", "q_head_stride",
    "q_token_stride", "cache_batch_stride", "cache_head_stride", "cache_token_stride",
    "kv_batch_stride", "kv_head_stride", "kv_token_stride", "keys_per_split", "padded_rows",
)  # fmt: skip
HEAD_DIM = 256


def ptxas() -> str:
    """The newest ptxas Triton ships (the plain one may predate the PTX version it emits)."""
    folder = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    newer = folder / "ptxas-blackwell"
    return str(newer if newer.is_file() else folder / "ptxas")


def registers(rows: int, keys: int, warps: int, stages: int) -> tuple[int, int]:
    """(registers per thread, bytes of spill stores) of the partial kernel at one setting."""
    signature = {name: "*bf16" for name in BF16_POINTERS}
    signature |= {name: "*fp32" for name in FP32_POINTERS}
    signature |= {name: "i32" for name in INTEGERS}
    signature["score_scale"] = "fp32"
    constants = {
        "SPLIT": True,
        "BLOCK_ROWS": rows,
        "BLOCK_KEYS": keys,
        "BLOCK_DIM": HEAD_DIM,
        "EVEN_DIM": True,
        "UPCAST": False,
    }
    signature |= {name: "constexpr" for name in constants}
    source = ASTSource(
        fn=kernels.partial_attention_kernel, signature=signature, constexprs=constants
    )
    compiled = triton.compile(
        source,
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "num_stages": stages},
    )
    with tempfile.TemporaryDirectory() as folder:
        ptx = Path(folder) / "kernel.ptx"
        ptx.write_text(compiled.asm["ptx"])
        command = [ptxas(), "-arch=sm_90a", "-v", str(ptx), "-o", str(Path(folder) / "k.cubin")]
        report = subprocess.run(command, capture_output=True, text=True, check=True)
    text = report.stdout + report.stderr
    used = re.search(r"Used (\d+) registers", text)
    spilled = re.search(r"(\d+) bytes spill stores", text)
    return int(used.group(1)) if used else -1, int(spilled.group(1)) if spilled else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", help="rows x keys x warps x stages, comma-separated")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    arguments = parser.parse_args(argv)
    settings = SETTINGS
    if arguments.settings:
        settings = [tuple(int(n) for n in one.split("x")) for one in arguments.settings.split(",")]
    if arguments.json:
        rows = [[*setting, *registers(*setting)] for setting in settings]
        print(json.dumps(rows))
        return 0
    print(f"triton {triton.__version__}, {Path(ptxas()).name}, sm_90a, head dim {HEAD_DIM}")
    print("rows keys warps stages  registers  spill bytes")
    for rows, keys, warps, stages in settings:
        used, spilled = registers(rows, keys, warps, stages)
        print(f"{rows:4} {keys:4} {warps:5} {stages:6}  {used:9}  {spilled:11}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
