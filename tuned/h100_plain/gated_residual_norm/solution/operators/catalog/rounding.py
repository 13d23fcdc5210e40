"""Round float32 to the nearest BF16 (ties to even) the same way on a GPU and in the interpreter.

The Triton interpreter truncates on `.to(tl.bfloat16)`, so the catalog kernels round with this
helper instead; on a GPU it matches the hardware's round-to-nearest-even conversion.
"""

import triton
import triton.language as tl


@triton.jit
def round_to_bfloat16(x):
    """x (float32) rounded to the nearest BF16 value, ties to even, still as float32."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    return (bits & 0xFFFF0000).to(tl.float32, bitcast=True)
