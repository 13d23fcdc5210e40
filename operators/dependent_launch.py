"""Programmatic dependent launch: a kernel that starts while the one before it on the stream
drains, safe only because it waits for that one before it touches memory.

In a CUDA graph of thousands of short kernels the device idles between them while each launch
is set up; a launch marked for dependent launch (Hopper and later) is set up during its
predecessor's tail instead (`benchmarks/pdl_probe.py`: 0.24-0.47 us a launch on chains of
elementwise kernels). A kernel opts in by calling `await_producer()` first. Whether a kernel
is launched that way is read off its compiled code, not trusted from its source: its PTX must
run `griddepcontrol.wait` unconditionally before any memory access other than its own
parameters and before any branch (`unawaited_access`). The evaluator holds a candidate's
kernels to the same rule, so a kernel that reads its inputs before their producer finished,
correct only while judged on inputs written long before, is refused.
"""

import triton
import triton.language as tl
from triton.language.target_info import cuda_capability_geq

from operators import triton_runtime

WAIT = "griddepcontrol.wait"
ALLOWED_BEFORE_WAIT = ("ld.param",)
TOUCHES_MEMORY_OR_BRANCHES = frozenset(
    {
        "ld", "ldu", "st", "atom", "red", "cp", "prefetch", "prefetchu", "tex", "tld4",
        "suld", "sust", "sured", "mbarrier", "ldmatrix", "stmatrix", "wgmma", "tcgen05",
        "multimem", "bra", "brx", "call", "ret", "exit", "trap",
    }
)  # fmt: skip

_WAITS = tl.constexpr(not triton_runtime.interpreting())


class DependentLaunch:
    """Whether kernels that wait first are bound for dependent launch; switched off to measure
    what it gives (`operators.launch_modes.plain_launches`). This module is vendored into
    solutions with the launcher, so it imports only what a kernel may (no `os`, no `re`)."""

    enabled = True


@triton.jit
def await_producer():
    """First statement of a kernel that may start before its predecessor finished: wait for
    it (its writes are visible after), then let the next launch start setting up."""
    if _WAITS and cuda_capability_geq(9, 0):
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


def unawaited_access(ptx: str) -> str | None:
    """The first instruction of the kernel's PTX that may touch memory or branch before an
    unpredicated `griddepcontrol.wait`, or why the kernel never waits; None when it waits
    first."""
    text = _without_comments(ptx)
    entry = text.find(".entry")
    opening = text.find("{", entry) if entry >= 0 else -1
    if opening < 0:
        return "no kernel entry in the PTX"
    body = text[opening + 1 :]
    for line in body.splitlines():  # directives such as .loc end at the line
        for statement in line.split(";"):
            words = statement.replace("{", " ").replace("}", " ").split()
            while words and words[0].endswith(":"):  # labels
                words = words[1:]
            if not words or words[0].startswith("."):
                continue
            predicated = words[0].startswith("@")
            opcode = words[1] if predicated and len(words) > 1 else words[0]
            if opcode == WAIT and not predicated:
                return None
            if opcode.startswith(ALLOWED_BEFORE_WAIT):
                continue
            if opcode.split(".")[0] in TOUCHES_MEMORY_OR_BRANCHES and WAIT in body:
                return f"`{' '.join(words)}` runs before `{WAIT}`"
    return f"the kernel never runs an unpredicated `{WAIT}` first"


def _without_comments(ptx: str) -> str:
    """PTX with its // and /* */ comments removed."""
    kept, position = [], 0
    while position < len(ptx):
        line_comment, block_comment = ptx.find("//", position), ptx.find("/*", position)
        starts = [index for index in (line_comment, block_comment) if index >= 0]
        if not starts:
            kept.append(ptx[position:])
            break
        first = min(starts)
        kept.append(ptx[position:first])
        if first == line_comment:
            end = ptx.find("\n", first)
            position = len(ptx) if end < 0 else end
        else:
            end = ptx.find("*/", first)
            position = len(ptx) if end < 0 else end + 2
    return "".join(kept)


def dependent_variant(kernel, grid, args, options: dict, compiled):
    """The kernel compiled for dependent launch when its compiled code waits first (CUDA,
    enabled, not already asked for), else `compiled` itself."""
    if not DependentLaunch.enabled or "launch_pdl" in options:
        return compiled
    ptx = getattr(compiled, "asm", {}).get("ptx")
    if not ptx or unawaited_access(ptx) is not None:
        return compiled
    try:
        variant = kernel.warmup(*args, grid=grid, **options, launch_pdl=True)
    except Exception:  # a build that cannot take the option keeps the plain launch
        return compiled
    return variant if getattr(variant.metadata, "launch_pdl", False) else compiled
