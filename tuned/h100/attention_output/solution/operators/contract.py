"""The numerical contract a kernel must meet against its Torch reference.

Tolerances are never free-form: `atol = 2**-10` and `rtol = k * 2**-8`, where k counts the
BF16 roundings the kernel and the reference do not share, so every tolerance has a reason.
"""

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, model_validator

ATOL = 2.0**-10
RTOL_PER_ROUNDING = 2.0**-8


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
    """`bit_exact`, or `tolerance` with k unshared BF16 roundings and the reason for them."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["bit_exact", "tolerance"]
    roundings: int = 0
    reason: str

    @model_validator(mode="after")
    def _tolerance_is_justified(self) -> "Contract":
        if self.mode == "tolerance" and self.roundings <= 0:
            raise ValueError(
                "contract.roundings: mode 'tolerance' needs k >= 1 unshared BF16 roundings "
                "(zero tolerance means mode 'bit_exact')"
            )
        if self.mode == "bit_exact" and self.roundings != 0:
            raise ValueError("contract.roundings: mode 'bit_exact' takes no roundings")
        if not self.reason.strip():
            raise ValueError("contract.reason: state why the contract is what it is")
        return self

    @property
    def atol(self) -> float:
        return ATOL if self.mode == "tolerance" else 0.0

    @property
    def rtol(self) -> float:
        return self.roundings * RTOL_PER_ROUNDING if self.mode == "tolerance" else 0.0

    def describe(self) -> str:
        if self.mode == "bit_exact":
            return f"bit_exact ({self.reason})"
        return f"tolerance atol=2^-10 rtol={self.roundings}*2^-8 ({self.reason})"

    def check(
        self, name: str, got: torch.Tensor, expected: torch.Tensor
    ) -> ContractViolation | None:
        """Compare one output with the reference's; None when the contract holds."""
        if type(got) is not torch.Tensor:
            return ContractViolation(output=name, reason=f"type {type(got).__name__}, not Tensor")
        if got.dtype != expected.dtype:
            return ContractViolation(output=name, reason=f"dtype {got.dtype} != {expected.dtype}")
        if tuple(got.shape) != tuple(expected.shape):
            return ContractViolation(
                output=name, reason=f"shape {tuple(got.shape)} != {tuple(expected.shape)}"
            )
        got_cpu = got.detach().cpu()
        expected_cpu = expected.detach().cpu()
        if self.mode == "bit_exact":
            return _first_bit_difference(name, got_cpu, expected_cpu)
        return _first_tolerance_violation(name, got_cpu, expected_cpu, self.atol, self.rtol)


def _first_bit_difference(name: str, got: torch.Tensor, expected: torch.Tensor):
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


def _first_tolerance_violation(name, got, expected, atol, rtol):
    got64 = got.to(torch.float64)
    expected64 = expected.to(torch.float64)
    finite_reference = torch.isfinite(expected64)
    nonfinite_got = ~torch.isfinite(got64) & finite_reference
    if bool(nonfinite_got.any()):
        element = int(nonfinite_got.reshape(-1).nonzero()[0, 0])
        return ContractViolation(
            output=name,
            reason="NaN/Inf where the reference is finite",
            index=_unravel(element, tuple(got.shape)),
            got=float(got64.reshape(-1)[element]),
            expected=float(expected64.reshape(-1)[element]),
        )
    error = torch.sub(got64, expected64).abs_()
    bad = ~(error <= expected64.abs().mul_(rtol).add_(atol))  # atol + rtol*|ref|, in place
    if not bool(finite_reference.all()):  # where the reference is NaN/Inf, the same is right
        same_nonfinite = ~finite_reference & (
            (got64 == expected64) | (torch.isnan(got64) & torch.isnan(expected64))
        )
        bad &= ~same_nonfinite
    if not bool(bad.any()):
        return None
    element = int(bad.reshape(-1).nonzero()[0, 0])
    return ContractViolation(
        output=name,
        reason=f"|got-ref| > {atol:g} + {rtol:g}*|ref| ({int(bad.sum())} elements)",
        index=_unravel(element, tuple(got.shape)),
        got=float(got64.reshape(-1)[element]),
        expected=float(expected64.reshape(-1)[element]),
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(index))
