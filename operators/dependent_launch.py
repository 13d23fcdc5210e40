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

import os
import re

import triton
import triton.language as tl
from triton.language.target_info import cuda_capability_geq

from operators import triton_runtime

DISABLE_VARIABLE = "CONTROLLER_DEPENDENT_LAUNCH"
"""Set to 0 to launch every kernel plainly (to measure what dependent launch gives)."""
WAIT = "griddepcontrol.wait"
ALLOWED_BEFORE_WAIT = ("ld.param",)
TOUCHES_MEMORY_OR_BRANCHES = frozenset(
    {
        "ld", "ldu", "st", "atom", "red", "cp", "prefetch", "prefetchu", "tex", "tld4",
        "suld", "sust", "sured", "mbarrier", "ldmatrix", "stmatrix", "wgmma", "tcgen05",
        "multimem", "bra", "brx", "call", "ret", "exit", "trap",
    }
)  # fmt: skip
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_ENTRY = re.compile(r"\.entry\s+[\w$]+\s*\(.*?\)\s*(?:\.[^{]*)?\{", re.DOTALL)

_WAITS = tl.constexpr(not triton_runtime.interpreting())


@triton.jit
def await_producer():
    """First statement of a kernel that may start before its predecessor finished: wait for
    it (its writes are visible after), then let the next launch start setting up."""
    if _WAITS and cuda_capability_geq(9, 0):
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


def enabled() -> bool:
    return os.environ.get(DISABLE_VARIABLE, "1") != "0"


def unawaited_access(ptx: str) -> str | None:
    """The first instruction of the kernel's PTX that may touch memory or branch before an
    unpredicated `griddepcontrol.wait`, or why the kernel never waits; None when it waits
    first."""
    entry = _ENTRY.search(_COMMENT.sub("", ptx))
    if entry is None:
        return "no kernel entry in the PTX"
    body = _COMMENT.sub("", ptx)[entry.end() :]
    for statement in re.split(r"[;\n]", body):  # directives such as .loc end at the line
        text = statement.strip().lstrip("{}").strip()
        while text and text.split()[0].endswith(":"):  # labels
            text = text.split(maxsplit=1)[1] if len(text.split()) > 1 else ""
        if not text or text.startswith("."):
            continue
        predicated = text.startswith("@")
        opcode = text.split()[1] if predicated and len(text.split()) > 1 else text.split()[0]
        if opcode == WAIT and not predicated:
            return None
        if opcode.startswith(ALLOWED_BEFORE_WAIT):
            continue
        if opcode.split(".")[0] in TOUCHES_MEMORY_OR_BRANCHES:
            if WAIT not in body:
                break
            return f"`{' '.join(text.split())}` runs before `{WAIT}`"
    return f"the kernel never runs an unpredicated `{WAIT}` first"


def dependent_variant(kernel, grid, args, options: dict, compiled):
    """The kernel compiled for dependent launch when its compiled code waits first (CUDA,
    enabled, not already asked for), else `compiled` itself."""
    if not enabled() or "launch_pdl" in options:
        return compiled
    ptx = getattr(compiled, "asm", {}).get("ptx")
    if not ptx or unawaited_access(ptx) is not None:
        return compiled
    try:
        variant = kernel.warmup(*args, grid=grid, **options, launch_pdl=True)
    except Exception:  # a build that cannot take the option keeps the plain launch
        return compiled
    return variant if getattr(variant.metadata, "launch_pdl", False) else compiled
