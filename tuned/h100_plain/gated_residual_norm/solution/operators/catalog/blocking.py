"""How many rows one program of a row-wise catalog kernel takes, compiled or interpreted.

The Triton interpreter pays a fixed cost for every program instance, so there one program takes
many rows and the grid shrinks to a handful; compiled on a GPU, one row per program keeps every
multiprocessor busy. The kernels' numerics never depend on the choice.
"""

import triton

from ...operators import triton_runtime

INTERPRETER_MAX_ROWS = 1024
"""Most rows one interpreted program takes."""

INTERPRETER_MAX_ELEMENTS = 1 << 17
"""Most elements of one interpreted block, so a wide row still keeps numpy's arrays modest."""


def rows_per_program(rows: int, block: int, compiled_rows: int = 1) -> int:
    """A power of two: `compiled_rows` on a GPU, up to all `rows` under the interpreter."""
    if not triton_runtime.interpreting():
        return compiled_rows
    fitting = max(1, INTERPRETER_MAX_ELEMENTS // max(1, block))
    largest = min(triton.next_power_of_2(max(1, rows)), INTERPRETER_MAX_ROWS, fitting)
    return 1 << (largest.bit_length() - 1)


def interpreter_block(size: int, compiled_block: int) -> int:
    """A power-of-two block: the whole of `size` under the interpreter, else `compiled_block`."""
    if triton_runtime.interpreting():
        return triton.next_power_of_2(max(1, size))
    return compiled_block
