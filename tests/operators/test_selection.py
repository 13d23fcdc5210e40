"""Kernel profile resolution: none, torch, auto and named profiles, read from a real folder."""

import json
from pathlib import Path

import pytest
import torch

from operators import ops, record_registry_hits, use_kernel_profile
from operators.catalog.rms_norm import rms_norm_reference, rms_norm_triton
from operators.environment import current_kernel_environment
from operators.errors import ProfileError
from operators.layouts import VerifiedLayouts, layout_of
from operators.profile_verification import record_verification
from operators.profiles import file_digest
from operators.selection import KernelSelection

TUNED_SOURCE = '''"""A tuned rms_norm that marks its output so the test can tell it ran."""

import torch


def kernel(x, weight, eps=1e-6):
    return torch.full_like(x, 7.0)


def applies(x, weight, eps=1e-6):
    return tuple(x.shape) == (4, 1024)
'''


def write_profile(root: Path, name: str = "fast", environment=None, verified=True) -> Path:
    """Install a one-operator profile the way `controller install` lays it out, and mark it
    verified as `controller verify` does when it passes (unless `verified` is False)."""
    folder = root / name
    (folder / "rms_norm").mkdir(parents=True)
    source = folder / "rms_norm" / "kernel.py"
    source.write_text(TUNED_SOURCE)
    environment = environment or current_kernel_environment()
    profile = {
        "name": name,
        "environment": environment.model_dump(),
        "operators": {"rms_norm": {"source": "rms_norm/kernel.py"}},
        "files": {"rms_norm/kernel.py": file_digest(source)},
    }
    (folder / "profile.json").write_text(json.dumps(profile))
    if verified:
        record_verification(folder, "test fixture", timed=False)
    return folder


def rows(count: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(count)
    x = torch.randn(count, 1024, generator=generator).to(torch.bfloat16)
    return x, torch.randn(1024, generator=generator).to(torch.bfloat16)


def test_none_runs_the_preferred_kernel_and_torch_the_reference(tmp_path):
    assert KernelSelection("none", tuned_root=tmp_path).resolve("rms_norm").preferred is (
        rms_norm_triton
    )
    assert KernelSelection("torch", tuned_root=tmp_path).resolve("rms_norm").preferred is (
        rms_norm_reference
    )


def test_named_profile_runs_the_tuned_kernel_where_it_applies(tmp_path):
    write_profile(tmp_path)
    resolved = KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")
    assert bool((resolved(*rows(4)) == 7.0).all())


def test_applies_false_falls_back_to_the_preferred_kernel(tmp_path):
    write_profile(tmp_path)
    resolved = KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")
    x, weight = rows(3)
    assert torch.equal(resolved(x, weight), rms_norm_triton(x, weight))


def test_operators_a_profile_does_not_tune_use_the_preferred_kernel(tmp_path):
    write_profile(tmp_path)
    resolved = KernelSelection("fast", tuned_root=tmp_path).resolve("gated_gelu")
    assert resolved.tuned is None


def test_auto_picks_the_profile_verified_for_this_environment(tmp_path):
    foreign = current_kernel_environment().model_copy(update={"gpu_name": "NVIDIA H200"})
    write_profile(tmp_path, "elsewhere", foreign)
    write_profile(tmp_path, "here")
    resolved = KernelSelection("auto", tuned_root=tmp_path).resolve("rms_norm")
    assert resolved.tuned is not None
    assert bool((resolved(*rows(4)) == 7.0).all())


def test_auto_without_a_matching_profile_runs_the_preferred_kernels(tmp_path):
    foreign = current_kernel_environment().model_copy(update={"compute_capability": "9.0"})
    write_profile(tmp_path, "elsewhere", foreign)
    assert KernelSelection("auto", tuned_root=tmp_path).resolve("rms_norm").tuned is None
    missing_root = tmp_path / "absent"
    assert KernelSelection("auto", tuned_root=missing_root).resolve("rms_norm").tuned is None


def test_tampered_profile_file_is_refused(tmp_path):
    folder = write_profile(tmp_path)
    source = folder / "rms_norm" / "kernel.py"
    source.write_text(source.read_text().replace("7.0", "8.0"))
    with pytest.raises(ProfileError, match="rms_norm/kernel.py does not match its digest"):
        KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")


def test_unrecorded_python_file_in_a_profile_is_refused(tmp_path):
    folder = write_profile(tmp_path)
    (folder / "rms_norm" / "helper.py").write_text("import os\n")
    with pytest.raises(ProfileError, match="helper.py is not in profile.json"):
        KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")


def test_profile_for_another_gpu_is_refused_with_a_one_line_reason(tmp_path):
    foreign = current_kernel_environment().model_copy(update={"gpu_name": "NVIDIA H200"})
    write_profile(tmp_path, "fast", foreign)
    with pytest.raises(ProfileError) as refused:
        KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")
    message = str(refused.value)
    assert "another environment (gpu_name:" in message and "NVIDIA H200" in message
    assert "\n" not in message


def test_an_unverified_profile_is_refused_and_auto_passes_it_over(tmp_path):
    write_profile(tmp_path, "fresh", verified=False)
    with pytest.raises(ProfileError) as refused:
        KernelSelection("fresh", tuned_root=tmp_path).resolve("rms_norm")
    assert "profile 'fresh' is not verified (no passing `controller verify`" in str(refused.value)
    assert "run `controller verify --profile fresh`" in str(refused.value)
    assert KernelSelection("auto", tuned_root=tmp_path).resolve("rms_norm").tuned is None
    allowed = KernelSelection("fresh", tuned_root=tmp_path, allow_unverified=True)
    assert allowed.resolve("rms_norm").tuned is not None  # what `verify` itself loads


def test_a_profile_changed_after_verify_is_refused_until_verified_again(tmp_path):
    folder = write_profile(tmp_path)
    manifest = json.loads((folder / "profile.json").read_text())
    manifest["operators"]["rms_norm"]["applies"] = "kernel"  # a different profile, same files
    (folder / "profile.json").write_text(json.dumps(manifest))
    with pytest.raises(ProfileError, match="it changed since `test fixture` passed it"):
        KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")
    (folder / "verified.json").write_text("{not json")
    with pytest.raises(ProfileError, match="verified.json is malformed"):
        KernelSelection("fast", tuned_root=tmp_path).resolve("rms_norm")


def test_profile_that_is_not_installed_is_refused(tmp_path):
    with pytest.raises(ProfileError, match="'missing' is not installed"):
        KernelSelection("missing", tuned_root=tmp_path).resolve("rms_norm")


def test_use_kernel_profile_routes_registry_calls_and_restores(tmp_path):
    write_profile(tmp_path)
    x, weight = rows(4)
    with use_kernel_profile(KernelSelection("fast", tuned_root=tmp_path)):
        assert bool((ops.rms_norm(x, weight) == 7.0).all())
    with use_kernel_profile("torch"):
        assert torch.equal(ops.rms_norm(x, weight), rms_norm_reference(x, weight))


def test_verified_layouts_compare_size_one_and_empty_strides_as_zero():
    verified = VerifiedLayouts([(layout_of(torch.empty(1, 8, dtype=torch.bfloat16)), 1e-6)])
    odd_stride_row = torch.empty(5, 8, dtype=torch.bfloat16)[2:3]
    assert odd_stride_row.stride() == (8, 1)
    assert verified.applies(odd_stride_row, 1e-6)
    assert not verified.applies(odd_stride_row, 1e-5)
    assert not verified.applies(torch.empty(1, 8, dtype=torch.float32), 1e-6)
    assert not verified.applies(torch.empty(2, 8, dtype=torch.bfloat16), 1e-6)
    empty = torch.empty(0, 8, dtype=torch.bfloat16)
    empty_strided = torch.empty(0, 16, dtype=torch.bfloat16)[:, ::2]
    assert layout_of(empty) == layout_of(empty_strided)
    transposed = torch.empty(8, 4, dtype=torch.bfloat16).t()
    assert layout_of(transposed) != layout_of(torch.empty(4, 8, dtype=torch.bfloat16))


def test_verified_layouts_refuse_tensor_subclasses():
    class Marked(torch.Tensor):
        pass

    plain = torch.empty(2, 8)
    verified = VerifiedLayouts([(layout_of(plain),)])
    assert verified.applies(plain)
    assert not verified.applies(plain.as_subclass(Marked))


def test_verified_layouts_take_a_models_weights_as_parameters():
    # A model passes its weights as Parameters: the tuned kernel must apply to them.
    weight = torch.nn.Parameter(torch.empty(8, 8, dtype=torch.bfloat16), requires_grad=False)
    verified = VerifiedLayouts([(layout_of(weight.detach()),)])
    assert verified.applies(weight)


def _two_calls(x, weight):
    ops.rms_norm(x, weight)
    return ops.rms_norm(x, weight)


def _one_call(x, weight):
    return ops.rms_norm(x, weight)


def test_record_registry_hits_counts_each_call_site():
    x, weight = rows(2)
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        _two_calls(x, weight)
        _one_call(x, weight)
    assert hits[("rms_norm", __file__, "_two_calls")] == 2
    assert hits[("rms_norm", __file__, "_one_call")] == 1
    assert sum(hits.values()) == 3
    _one_call(x, weight)
    assert sum(hits.values()) == 3
