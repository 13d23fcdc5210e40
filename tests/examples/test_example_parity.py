"""The parity drivers are deterministic and run under whatever profile the caller chose."""

import importlib
import tomllib
from pathlib import Path

import torch

from examples.parity import tiny_batch1, tiny_batch8
from operators import REGISTRY, KernelSelection, OperatorRegistry, use_kernel_profile

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = {"actions", "first_velocity", "prefix_keys", "prefix_values", "vision_features"}


def same_bytes(first: dict, second: dict) -> bool:
    if first.keys() != second.keys():
        return False
    return all(
        first[name].dtype == second[name].dtype
        and first[name].shape == second[name].shape
        and torch.equal(first[name].view(torch.uint8), second[name].view(torch.uint8))
        for name in first
    )


def test_pyproject_names_the_drivers():
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["controller"]
    drivers = []
    for entry in table["parity_configurations"]:
        module, function = entry.split(":")
        drivers.append(getattr(importlib.import_module(module), function))
    assert drivers == [tiny_batch1, tiny_batch8]


def test_tiny_batch1_is_deterministic_under_none(tiny_none_outputs):
    assert set(tiny_none_outputs) == OUTPUTS
    with use_kernel_profile("none"):
        again = tiny_batch1()
    assert same_bytes(tiny_none_outputs, again)


def test_tiny_batch8_is_deterministic_under_torch():
    with use_kernel_profile("torch"):
        first, second = tiny_batch8(), tiny_batch8()
    assert same_bytes(first, second)
    assert first["actions"].shape[0] == 8


def test_same_bytes_notices_a_one_bit_change(tiny_torch_outputs):
    changed = {name: tensor.clone() for name, tensor in tiny_torch_outputs.items()}
    changed["actions"].view(torch.int32).view(-1)[3] ^= 1
    assert not same_bytes(tiny_torch_outputs, changed)


def test_drivers_keep_the_callers_profile(tiny_torch_outputs):
    """A driver that chose its own profile would return the same bytes under any selection."""
    reference = REGISTRY.declaration("gated_residual_norm").reference

    def negated_gate(residual, update, gate, scale, shift, eps=1e-6):
        return reference(residual, update, -gate, scale, shift, eps)

    registry = OperatorRegistry()
    for declaration in REGISTRY:
        preferred = negated_gate if declaration.name == "gated_residual_norm" else None
        registry.register(declaration.model_copy(update={"preferred": preferred}))
    with use_kernel_profile(KernelSelection("none", registry=registry)):
        flipped = tiny_batch1()
    assert not torch.equal(flipped["actions"], tiny_torch_outputs["actions"])
    assert torch.equal(flipped["vision_features"], tiny_torch_outputs["vision_features"])
