"""Small drivers for the capture and profile tests: real registry calls, tiny sizes."""

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from gates.tasks.captured import render_captured_package
from gates.tasks.generation import write_package
from operators import REGISTRY, ops, record_registry_calls, use_kernel_profile
from operators.call_capture import CallCapture

HIDDEN = 32


def strided_rms_norm() -> None:
    """rms_norm on a column-sliced input (row stride 2*HIDDEN), twice, plus a size-one batch
    whose first-dimension stride differs between calls (one layout: size-one strides are 0)."""
    weight = torch.ones(HIDDEN, dtype=torch.bfloat16)
    wide = torch.randn(4, 2 * HIDDEN, dtype=torch.bfloat16)
    for _ in range(2):
        ops.rms_norm(wide[:, :HIDDEN], weight)
    ops.rms_norm(torch.randn(1, HIDDEN, dtype=torch.bfloat16), weight)
    ops.rms_norm(wide[:1, :HIDDEN].contiguous(), weight)


PROFILES_SEEN: list[str] = []
"""The kernel profile each `profile_seen` step ran under, for the `--kernel-profile` test."""


def profile_seen() -> None:
    """One rms_norm through the registry, noting the kernel profile its call resolved under."""
    from operators.selection import active_selection

    PROFILES_SEEN.append(active_selection().profile)
    ops.rms_norm(torch.randn(2, HIDDEN, dtype=torch.bfloat16), torch.ones(HIDDEN).bfloat16())


def tokens_first_residual() -> None:
    """gated_residual on tokens-first buffers seen as (batch, tokens, hidden), twice, run by
    the reference: its output keeps that layout, strides (HIDDEN, 2 * HIDDEN, 1), where the
    production kernel returns row-major rows."""
    gate = torch.randn(2, HIDDEN, dtype=torch.bfloat16)
    with use_kernel_profile("torch"):
        for _ in range(2):
            residual, update = (
                torch.randn(3, 2, HIDDEN, dtype=torch.bfloat16).transpose(0, 1) for _ in range(2)
            )
            ops.gated_residual(residual, update, gate)


class Attention(nn.Module):
    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        heads = hidden.view(1, 2, hidden.shape[0], HIDDEN // 2)
        return F.scaled_dot_product_attention(heads, heads, heads).reshape(hidden.shape)


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(HIDDEN, dtype=torch.bfloat16), requires_grad=False)
        self.attention = Attention()
        self.projection = nn.Linear(HIDDEN, HIDDEN, dtype=torch.bfloat16)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.attention(ops.rms_norm(hidden, self.weight))
        return hidden + self.projection(hidden)


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            hidden = layer(hidden)
        return hidden


def two_layers() -> torch.Tensor:
    """One step of a two-layer model: registry, attention and module ranges to attribute."""
    torch.manual_seed(0)
    with torch.no_grad():
        return TwoLayers()(torch.randn(4, HIDDEN, dtype=torch.bfloat16))


def captured_package(root: Path, operator: str, driver, seed: int) -> Path:
    """The task package `generate --captured` makes for `operator` from one run of `driver`."""
    capture = CallCapture()
    with record_registry_calls(observer=capture):
        torch.manual_seed(seed)
        driver()
    capture.write(root / "capture", f"capture_drivers:{driver.__name__}", [], 1)
    declaration = REGISTRY.declaration(operator)
    files = render_captured_package(declaration, root / "capture")
    folder, _ = write_package(declaration, root / "tasks", files=files)
    return folder
