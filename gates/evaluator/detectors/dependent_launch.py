"""Dependent launch (CUDA): a kernel the solution compiled to start while its predecessor on
the stream still runs must wait for that predecessor before it touches memory.

On Hopper a launch marked for programmatic dependent launch (Triton's `launch_pdl`) may start
as the kernel before it drains, and is safe only because it runs `griddepcontrol.wait` first.
Judged on inputs written long before its call, a kernel that reads them at once computes right
and overlaps its predecessor's tail, so it also times faster; deployed after the model's kernel
that writes those inputs, it reads them half written. The rule is read off each compiled
kernel's PTX, not its source: the wait must run unpredicated before any memory access other
than the kernel's parameters and before any branch. Pure: kernel facts in, verdict out;
`graph_nodes.py` reads the facts from the kernels Triton compiled for the solution.
"""

from pydantic import BaseModel, ConfigDict

from gates.evaluator.detectors import CheatDetected

WAIT = "griddepcontrol.wait"
ALLOWED_BEFORE_WAIT = ("ld.param",)
TOUCHES_MEMORY_OR_BRANCHES = frozenset(
    {
        "ld", "ldu", "st", "atom", "red", "cp", "prefetch", "prefetchu", "tex", "tld4",
        "suld", "sust", "sured", "mbarrier", "ldmatrix", "stmatrix", "wgmma", "tcgen05",
        "multimem", "bra", "brx", "call", "ret", "exit", "trap",
    }
)  # fmt: skip


class UnawaitedDependentLaunch(CheatDetected):
    """A kernel compiled for programmatic dependent launch touches memory before it waits for
    the kernel before it, so it may read inputs their producer has not finished writing."""


class CompiledKernelFacts(BaseModel):
    """What the verdict needs of one kernel Triton compiled from the solution's sources."""

    model_config = ConfigDict(frozen=True)

    name: str
    dependent_launch: bool
    ptx: str | None = None


def check_dependent_launches(kernels: list[CompiledKernelFacts]) -> None:
    """Refuse the first kernel compiled for dependent launch that does not wait first."""
    for kernel in kernels:
        if not kernel.dependent_launch:
            continue
        problem = "its PTX cannot be read" if not kernel.ptx else unawaited_access(kernel.ptx)
        if problem is not None:
            raise UnawaitedDependentLaunch(
                f"kernel {kernel.name!r} is compiled for dependent launch (launch_pdl) but "
                f"{problem}: it may start before the kernel writing its inputs has finished"
            )


def unawaited_access(ptx: str) -> str | None:
    """The first instruction of a kernel's PTX that may touch memory or branch before an
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
