"""Bound launches: one compiled kernel per argument layout, never reused across layouts that
Triton would specialise differently, and the same bits as Triton's own launch path."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from operators.catalog import CATALOG
from operators.declaration import as_outputs
from operators.kernel_launch import LaunchBinding, _layout_key, _traced, bound_kernel_count


def test_layouts_that_triton_specialises_apart_get_different_keys():
    storage = torch.empty(64, dtype=torch.bfloat16)
    aligned, shifted = storage[:32], storage[1:33]  # 16-byte aligned, then 2 bytes off
    base = _layout_key((aligned, 7, 1e-6))
    assert _layout_key((shifted, 7, 1e-6)) != base
    assert _layout_key((aligned.float(), 7, 1e-6)) != base
    assert _layout_key((aligned, 1, 1e-6)) != base  # equal to 1
    assert _layout_key((aligned, 32, 1e-6)) != base  # divisible by 16
    assert _layout_key((aligned, 2**40 + 7, 1e-6)) != base  # 64-bit
    assert _layout_key((aligned, 9, 1e-5)) == base  # same classes: one binding


def test_fake_tensors_mean_the_launch_is_traced():
    x = torch.empty(4)
    assert not _traced((x, 4))
    assert not _traced((torch.nn.Parameter(x, requires_grad=False), 4))  # a model's weight
    with FakeTensorMode() as mode:
        assert _traced((mode.from_tensor(x), 4))


@pytest.fixture
def binding():
    yield LaunchBinding
    LaunchBinding.enabled = True


def _outputs(declaration, inputs):
    return [t.clone() for t in as_outputs(declaration.preferred(*inputs, **declaration.params))]


@pytest.mark.gpu
def test_bound_launches_give_tritons_bits_for_every_catalog_kernel(binding):
    for declaration in CATALOG:
        for workload in declaration.workloads:
            inputs = declaration.make_inputs(workload, seed=3, device="cuda")
            binding.enabled = False
            expected = _outputs(declaration, inputs)
            binding.enabled = True
            first, second = _outputs(declaration, inputs), _outputs(declaration, inputs)
            for want, got_first, got_second in zip(expected, first, second, strict=True):
                assert torch.equal(want, got_first), (declaration.name, workload.name)
                assert torch.equal(want, got_second), (declaration.name, workload.name)


@pytest.mark.gpu
def test_a_new_layout_binds_a_new_kernel_and_a_repeated_one_does_not(binding):
    declaration = next(d for d in CATALOG if d.name == "rms_norm")
    weight = torch.randn(1024, device="cuda").to(torch.bfloat16)
    storage = torch.randn(13 * 1024 + 1, device="cuda").to(torch.bfloat16)
    layouts = [
        storage[: 13 * 1024].view(13, 1024),
        storage[:1024].view(1, 1024),
        storage[1 : 13 * 1024 + 1].view(13, 1024),
    ]
    for x in layouts:
        binding.enabled = False
        expected = declaration.preferred(x, weight)
        binding.enabled = True
        declaration.preferred(x, weight)
        count = bound_kernel_count()
        assert torch.equal(declaration.preferred(x, weight), expected)
        assert bound_kernel_count() == count
