"""The dependent-launch detector: a kernel the solution compiled for programmatic dependent
launch is refused unless its PTX waits for its predecessor first (unpredicated, before any
memory access or branch); kernels launched plainly are not its business."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gates.evaluator.detectors.dependent_launch import (
    CompiledKernelFacts,
    UnawaitedDependentLaunch,
    check_dependent_launches,
    unawaited_access,
)

# Compiled for sm_90 by the real compiler in a child without the interpreter (PTX needs no GPU).
KERNELS = textwrap.dedent(
    """
    import json, sys
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def waits_first(x, y):
        tl.extra.cuda.gdc_wait()
        offsets = tl.arange(0, 128)
        tl.store(y + offsets, tl.load(x + offsets) * 2)

    @triton.jit
    def reads_first(x, y):
        offsets = tl.arange(0, 128)
        value = tl.load(x + offsets)
        tl.extra.cuda.gdc_wait()
        tl.store(y + offsets, value * 2)

    @triton.jit
    def never_waits(x, y):
        offsets = tl.arange(0, 128)
        tl.store(y + offsets, tl.load(x + offsets) * 2)

    ptx = {}
    for kernel in (waits_first, reads_first, never_waits):
        source = ASTSource(fn=kernel, signature={"x": "*fp32", "y": "*fp32"}, constexprs={})
        ptx[kernel.__name__] = triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    json.dump(ptx, sys.stdout)
    """
)


@pytest.fixture(scope="module")
def compiled_ptx(tmp_path_factory) -> dict[str, str]:
    script = tmp_path_factory.mktemp("ptx") / "kernels.py"
    script.write_text(KERNELS)
    environment = {**os.environ, "TRITON_INTERPRET": "0"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_compiled_kernels_that_read_before_waiting_or_never_wait_are_refused(compiled_ptx):
    facts = [
        CompiledKernelFacts(name=name, dependent_launch=True, ptx=ptx)
        for name, ptx in compiled_ptx.items()
    ]
    check_dependent_launches([fact for fact in facts if fact.name == "waits_first"])
    with pytest.raises(UnawaitedDependentLaunch, match="'reads_first'.*`ld.global"):
        check_dependent_launches([fact for fact in facts if fact.name == "reads_first"])
    with pytest.raises(UnawaitedDependentLaunch, match="'never_waits'.*never runs"):
        check_dependent_launches([fact for fact in facts if fact.name == "never_waits"])


def test_plain_launches_are_not_its_business(compiled_ptx):
    check_dependent_launches(
        [CompiledKernelFacts(name="plain", dependent_launch=False, ptx=compiled_ptx["reads_first"])]
    )


def test_a_dependent_launch_whose_code_cannot_be_read_is_refused():
    with pytest.raises(UnawaitedDependentLaunch, match="cannot be read"):
        check_dependent_launches([CompiledKernelFacts(name="k", dependent_launch=True)])


def _ptx(body: str) -> str:
    return (
        ".version 8.4\n.target sm_90a\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n"
        ".reqntid 128\n{\n\t.reg .b32 %r<4>;\n" + textwrap.dedent(body) + "\n}\n"
    )


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("ld.param.u64 %rd1, [k_param_0];\nmov.u32 %r1, %tid.x;\ngriddepcontrol.wait;\n"
         "ld.global.b32 %r2, [%rd1];", None),
        ("setp.eq.s32 %p1, %r1, 0;\n@%p1 griddepcontrol.wait;\nld.global.b32 %r2, [%rd1];",
         "ld.global"),
        ("@%p1 bra $L__BB0_2;\ngriddepcontrol.wait;\n$L__BB0_2:\nst.global.b32 [%rd1], %r1;",
         "bra"),
        (".loc 1 2 3\nld.global.nc.b32 %r2, [%rd1]; // a read behind a directive line\n"
         "griddepcontrol.wait;", "ld.global.nc"),
        ("/* griddepcontrol.wait; */ ld.global.b32 %r2, [%rd1];\ngriddepcontrol.wait;",
         "ld.global"),
        ("atom.global.add.u32 %r2, [%rd1], 1;\ngriddepcontrol.wait;", "atom.global"),
        ("cp.async.ca.shared.global [%r1], [%rd1], 16;\ngriddepcontrol.wait;", "cp.async"),
        ("$L__BB0_1: griddepcontrol.wait;\nld.global.b32 %r2, [%rd1];", None),
    ],
)  # fmt: skip
def test_only_an_unpredicated_wait_before_any_memory_access_or_branch_counts(body, named):
    problem = unawaited_access(_ptx(body))
    if named is None:
        assert problem is None
    else:
        assert problem is not None and named in problem, problem


def test_ptx_without_a_kernel_entry_is_not_trusted():
    assert unawaited_access("griddepcontrol.wait;") == "no kernel entry in the PTX"
