"""The bit-exact kernels compile for an H100/H200 (sm_90) with no fused multiply-add.

FMA contraction would round `a * b + c` once where eager BF16 rounds twice. The compiler is
run offline (no GPU needed) in a subprocess, since this process runs Triton interpreted.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
KERNELS = {
    "gated_residual": (
        "operators.catalog.gated_residual",
        "_gated_residual_kernel",
        {"ROWS": 1, "BLOCK": 1024},
    ),
    "rotate_qk": (
        "operators.catalog.rotate_qk",
        "_rotate_qk_kernel",
        {"ROWS": 8, "BLOCK_DIM": 256},
    ),
    "fused_fixture": ("__main__", "_fused_residual_kernel", {"BLOCK": 1024}),
}


@triton.jit
def _fused_residual_kernel(residual_ptr, update_ptr, gate_ptr, out_ptr, count, BLOCK: tl.constexpr):
    """The cheat the check exists for: residual + update * gate with one rounding."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < count
    residual = tl.load(residual_ptr + offsets, mask=mask).to(tl.float32)
    update = tl.load(update_ptr + offsets, mask=mask).to(tl.float32)
    gate = tl.load(gate_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (residual + update * gate).to(tl.bfloat16), mask=mask)


def compile_to_ptx(module_name: str, kernel_name: str, constexprs: dict[str, int]) -> str:
    """PTX for sm_90, BF16 pointers, i32 for every other argument."""
    import importlib

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = getattr(importlib.import_module(module_name), kernel_name)
    names = list(kernel.arg_names)
    signature, constants = {}, {}
    for index, name in enumerate(names):
        if name in constexprs:
            signature[name] = "constexpr"
            constants[(index,)] = constexprs[name]
        else:
            signature[name] = "*bf16" if name.endswith("_ptr") else "i32"
    source = ASTSource(kernel, signature, constants)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["ptx"]


def _instruction_counts() -> dict:
    counts = {}
    for operator, (module_name, kernel_name, constexprs) in KERNELS.items():
        ptx = compile_to_ptx(module_name, kernel_name, constexprs)
        counts[operator] = {
            "fma": len(re.findall(r"\bfma\.rn\.f32\b", ptx)),
            "mul": len(re.findall(r"\bmul(\.rn)?\.f32\b", ptx)),
        }
    return counts


def test_bit_exact_kernels_have_no_fused_multiply_add():
    environment = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(
        [sys.executable, __file__], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    if completed.returncode == 3:
        pytest.skip(completed.stdout.strip())
    assert completed.returncode == 0, completed.stderr[-2000:]
    counts = json.loads(completed.stdout.strip().splitlines()[-1])
    assert counts.pop("fused_fixture")["fma"] > 0, "the check cannot see a fused multiply-add"
    for operator, count in counts.items():
        assert count["mul"] > 0, f"{operator}: no multiplies found; the PTX check is broken"
        assert count["fma"] == 0, f"{operator}: {count['fma']} fused multiply-adds in its PTX"


if __name__ == "__main__":
    try:
        from triton.backends.nvidia import compiler  # noqa: F401
    except ImportError as error:
        print(f"no NVIDIA backend in this Triton: {error}")
        sys.exit(3)
    print(json.dumps(_instruction_counts()))
