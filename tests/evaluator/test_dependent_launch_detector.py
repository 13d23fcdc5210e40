"""The dependent-launch detector: a kernel the solution compiled for programmatic dependent
launch is refused unless its PTX waits for its predecessor first; kernels launched plainly
are not its business."""

import pytest

from gates.evaluator.detectors.dependent_launch import (
    CompiledKernelFacts,
    UnawaitedDependentLaunch,
    check_dependent_launches,
)

HEAD = ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n.reg .b64 %rd<3>;\n"
READS_FIRST = (
    HEAD + "ld.param.u64 %rd1, [k_param_0];\nld.global.b32 %r1, [%rd1];\ngriddepcontrol.wait;\n}"
)
WAITS_FIRST = (
    HEAD + "ld.param.u64 %rd1, [k_param_0];\ngriddepcontrol.wait;\nld.global.b32 %r1, [%rd1];\n}"
)


def test_a_dependent_launch_that_reads_before_it_waits_is_refused():
    kernels = [
        CompiledKernelFacts(name="fine", dependent_launch=True, ptx=WAITS_FIRST),
        CompiledKernelFacts(name="early", dependent_launch=True, ptx=READS_FIRST),
    ]
    with pytest.raises(UnawaitedDependentLaunch, match="'early'.*ld.global"):
        check_dependent_launches(kernels)


def test_a_dependent_launch_whose_code_cannot_be_read_is_refused():
    with pytest.raises(UnawaitedDependentLaunch, match="cannot be read"):
        check_dependent_launches([CompiledKernelFacts(name="k", dependent_launch=True)])


def test_plain_launches_and_waiting_dependent_launches_pass():
    check_dependent_launches(
        [
            CompiledKernelFacts(name="plain", dependent_launch=False, ptx=READS_FIRST),
            CompiledKernelFacts(name="waits", dependent_launch=True, ptx=WAITS_FIRST),
        ]
    )
