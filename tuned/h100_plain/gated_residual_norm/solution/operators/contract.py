"""The numerical contract a kernel must meet: `bit_exact`, or `no_less_accurate` than stock.

`no_less_accurate` is judged on each input set against the FP64 oracle, relative to the worse
of the stock formulation and the reference in the model's dtype (`operators.accuracy`), so no
tolerance is free-form and none is a fixed absolute term. `roundings` counts the BF16 roundings
a kernel may not share with its reference; only the model-level expectation of the example
(`examples/expectation.py`) reads it.
"""

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, model_validator


class ContractViolation(BaseModel):
    """The first way an output broke the contract, in words a kernel engineer can act on."""

    model_config = ConfigDict(frozen=True)

    output: str
    reason: str
    index: tuple[int, ...] = ()
    got: float | None = None
    expected: float | None = None

    def describe(self) -> str:
        where = f" at {list(self.index)}" if self.index else ""
        values = ""
        if self.got is not None:
            values = f": got {self.got!r}, expected {self.expected!r}"
        return f"output {self.output!r}{where}: {self.reason}{values}"


class Contract(BaseModel):
    """`bit_exact`, or `no_less_accurate` than stock, with the reason for it."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["bit_exact", "no_less_accurate"]
    roundings: int = 0
    reason: str

    @model_validator(mode="after")
    def _justified(self) -> "Contract":
        if self.mode == "no_less_accurate" and self.roundings <= 0:
            raise ValueError(
                "contract.roundings: mode 'no_less_accurate' needs k >= 1 unshared BF16 "
                "roundings (zero means mode 'bit_exact')"
            )
        if self.mode == "bit_exact" and self.roundings != 0:
            raise ValueError("contract.roundings: mode 'bit_exact' takes no roundings")
        if not self.reason.strip():
            raise ValueError("contract.reason: state why the contract is what it is")
        return self

    def describe(self) -> str:
        if self.mode == "bit_exact":
            return f"bit_exact ({self.reason})"
        return (
            "no_less_accurate: against FP64, RMS error <= 1.25x and max error <= 2x the worse "
            f"of stock and the reference in the model dtype ({self.reason})"
        )

    def check(
        self, name: str, got: torch.Tensor, expected: torch.Tensor
    ) -> ContractViolation | None:
        """A screen against one reference output alone, for tests of a registration: bytes
        under `bit_exact`; otherwise each element within `roundings` BF16 steps of |expected|
        plus its RMS (values under 2^-24 count as zero). Kernels are judged by
        `operators.accuracy`, which needs the inputs."""
        layout = layout_violation(name, got, expected)
        if layout is not None:
            return layout
        got, expected = got.detach().cpu(), expected.detach().cpu()
        if self.mode == "bit_exact":
            return first_bit_difference(name, got, expected)
        return _first_screen_violation(name, got, expected, self.roundings * 2.0**-8)


SCREEN_ZERO = 2.0**-24
"""Below this, a value counts as zero for the screen (a tail computed as 1e-28 where the
reference rounds to 0)."""


def _first_screen_violation(name: str, got, expected, share: float):
    got64, expected64 = got.double(), expected.double()
    finite = torch.isfinite(expected64)
    scale = float(expected64[finite].square().mean().sqrt()) if bool(finite.any()) else 0.0
    error = torch.sub(got64, expected64).abs_()
    bad = ~(error <= expected64.abs().add_(scale).mul_(share).add_(SCREEN_ZERO))
    same = (got64 == expected64) | (torch.isnan(got64) & torch.isnan(expected64))
    bad &= ~same
    if not bool(bad.any()):
        return None
    element = int(bad.reshape(-1).nonzero()[0, 0])
    return ContractViolation(
        output=name,
        reason=f"|got-ref| > {share:g}*(|ref| + RMS(ref)) ({int(bad.sum())} elements)",
        index=_unravel(element, tuple(got.shape)),
        got=float(got64.reshape(-1)[element]),
        expected=float(expected64.reshape(-1)[element]),
    )


def layout_violation(name: str, got, expected: torch.Tensor) -> ContractViolation | None:
    """A produced output that is not a plain tensor of the reference's dtype and shape."""
    if type(got) is not torch.Tensor:
        return ContractViolation(output=name, reason=f"type {type(got).__name__}, not Tensor")
    if got.dtype != expected.dtype:
        return ContractViolation(output=name, reason=f"dtype {got.dtype} != {expected.dtype}")
    if tuple(got.shape) != tuple(expected.shape):
        return ContractViolation(
            output=name, reason=f"shape {tuple(got.shape)} != {tuple(expected.shape)}"
        )
    return None


def first_bit_difference(name: str, got: torch.Tensor, expected: torch.Tensor):
    """The first element whose bytes differ, as a violation, or None."""
    got_bytes = got.contiguous().view(torch.uint8).reshape(-1)
    expected_bytes = expected.contiguous().view(torch.uint8).reshape(-1)
    differs = got_bytes != expected_bytes
    if not bool(differs.any()):
        return None
    element = int(differs.nonzero()[0, 0]) // got.element_size()
    index = _unravel(element, tuple(got.shape))
    return ContractViolation(
        output=name,
        reason="bits differ",
        index=index,
        got=float(got.reshape(-1)[element]),
        expected=float(expected.reshape(-1)[element]),
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(index))
