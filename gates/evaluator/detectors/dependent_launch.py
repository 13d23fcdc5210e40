"""Dependent launch (CUDA): a kernel the solution compiled to start while its predecessor on
the stream still runs must wait for that predecessor before it touches memory.

Judged on inputs written long before its call, a kernel that reads them at once computes
right and overlaps its predecessor's tail, so it also times faster; deployed after the model's
kernel that writes those inputs, it reads them half written. Which kernels may be launched that
way is read off their compiled code (`operators.dependent_launch.unawaited_access`), the rule
the registry's own launches follow. Pure: kernel facts in, verdict out; `graph_nodes.py` reads
the facts from the kernels Triton compiled for the solution.
"""

from pydantic import BaseModel, ConfigDict

from gates.evaluator.detectors import CheatDetected
from operators.dependent_launch import unawaited_access


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
