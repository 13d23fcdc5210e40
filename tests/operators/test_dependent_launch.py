"""Dependent launch: the rule read off compiled code (a kernel may start before its
predecessor finished only if its PTX waits for it before touching memory or branching), and
the launch binding that applies it."""

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from operators.dependent_launch import DependentLaunch, dependent_variant, unawaited_access
from operators.launch_modes import plain_launches

# Compiled for sm_90 in a child without the interpreter (no GPU is needed to emit PTX).
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
    import json

    script = tmp_path_factory.mktemp("ptx") / "kernels.py"
    script.write_text(KERNELS)
    environment = {**os.environ, "TRITON_INTERPRET": "0"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_compiled_kernels_that_wait_first_pass_and_the_others_are_named(compiled_ptx):
    assert unawaited_access(compiled_ptx["waits_first"]) is None
    problem = unawaited_access(compiled_ptx["reads_first"])
    assert (
        problem and problem.startswith("`ld.global") and "before `griddepcontrol.wait`" in problem
    )
    assert "never runs an unpredicated" in unawaited_access(compiled_ptx["never_waits"])


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


class _Kernel:
    """Stands for a JIT function: records the dependent-launch build it is asked for."""

    def __init__(self) -> None:
        self.asked: list[dict] = []

    def warmup(self, *args, grid, **options):
        self.asked.append(options)
        return SimpleNamespace(metadata=SimpleNamespace(launch_pdl=options.get("launch_pdl")))


def _compiled(ptx: str):
    return SimpleNamespace(asm={"ptx": ptx}, metadata=SimpleNamespace(launch_pdl=False))


def test_the_binding_builds_a_dependent_launch_only_for_kernels_that_wait_first(compiled_ptx):
    kernel = _Kernel()
    plain = _compiled(compiled_ptx["reads_first"])
    assert dependent_variant(kernel, (1,), (), {"BLOCK": 4}, plain) is plain
    assert kernel.asked == []
    waiting = _compiled(compiled_ptx["waits_first"])
    variant = dependent_variant(kernel, (1,), (), {"BLOCK": 4}, waiting)
    assert variant is not waiting and variant.metadata.launch_pdl is True
    assert kernel.asked == [{"BLOCK": 4, "launch_pdl": True}]
    with plain_launches():
        assert dependent_variant(_Kernel(), (1,), (), {}, waiting) is waiting
    assert DependentLaunch.enabled


PRODUCTION_KERNELS = ("ada_rms_norm", "gated_residual", "gated_gelu", "rms_norm", "rotate_qk")


@pytest.mark.gpu
@pytest.mark.parametrize("operator", PRODUCTION_KERNELS + ("split_kv_attention",))
def test_production_kernels_bind_for_dependent_launch_on_hopper_and_compute_the_same(operator):
    """On an sm_90 device every production kernel waits first, so its binding launches it for
    dependent launch, and its outputs equal those of the same kernel launched plainly."""
    import importlib

    import torch

    from operators import REGISTRY
    from operators.kernel_launch import bound_launch

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("dependent launch needs compute capability 9.0")
    declaration = REGISTRY.declaration(operator)
    module = importlib.import_module(f"operators.catalog.{operator}")
    kernel = getattr(module, f"_{operator}_kernel")
    inputs = declaration.make_inputs(declaration.workloads[0], seed=3, device="cuda")
    with plain_launches():
        plain = [declaration.preferred(*inputs, **declaration.params) for _ in range(2)]
        assert bound_launch(kernel).metadata.launch_pdl is False
    dependent = [declaration.preferred(*inputs, **declaration.params) for _ in range(2)]
    torch.cuda.synchronize()
    assert bound_launch(kernel).metadata.launch_pdl is True
    for got, expected in zip(dependent, plain, strict=True):
        for left, right in zip(
            torch.utils._pytree.tree_leaves(got),
            torch.utils._pytree.tree_leaves(expected),
            strict=True,
        ):
            assert torch.equal(left, right)
