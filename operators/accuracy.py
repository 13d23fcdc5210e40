"""The rule a kernel's outputs are judged by: no less accurate than stock.

On each input set, every output's error against the FP64 oracle (the reference run with every
float in FP64) is held to the same set's error of the worse of two baselines, the stock
formulation (what a PyTorch user deploys, e.g. SDPA) and the reference in the model's dtype:
its RMS error at most `RMS_RATIO` times, its largest absolute error at most `MAX_RATIO` times.
A rule stock itself fails would be a wrong rule; one that lets a less accurate kernel through
would be a hole. The bounds are absolute and measured on the set's own inputs, so an element's
allowance scales with the terms that produced it (a cancelling attention output is allowed
what stock's rounding of its large terms gives, not a fixed 2^-10).

One more BF16 rounding of a result as large as the output adds about 40% to its RMS error and
is refused; a different FP32 sum order, or a single rounding where the baseline rounds twice,
stays within.
"""

from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict

from operators.contract import ContractViolation, first_bit_difference, layout_violation
from operators.declaration import OperatorDeclaration, as_outputs
from operators.error_measure import ErrorFigures, error_figures
from operators.fp64_oracle import fp64_outputs, fp64_terms

RMS_RATIO = 1.25
"""A candidate's RMS error may be this many times the worse baseline's."""
MAX_RATIO = 2.0
"""A candidate's largest absolute error may be this many times the worse baseline's."""
RMS_FLOOR = 2.0**-14
"""Relative to the RMS of the terms behind the output (the FP64 reference on the inputs'
magnitudes): an exact baseline does not demand an exact candidate, and an output that cancels
to zero is allowed what a rounding far below BF16's of its terms gives."""
MAX_FLOOR = 2.0**-12
"""Relative to the largest of those terms, for the same reason."""
STOCK_SLACK = 2.0
"""A declared stock formulation may err at most this many times the reference in the model's
dtype (RMS, on the same set): SDPA in BF16 errs up to 1.4x; a sloppier "stock" would loosen
the contract of the very operator that declares it."""


class OutputBound(BaseModel):
    """One output's allowance on one input set, and the baseline figures it comes from."""

    model_config = ConfigDict(frozen=True)

    output: str
    rms: float
    max_abs: float
    reference_rms: float
    reference_max_abs: float
    stock_rms: float
    stock_max_abs: float
    floor_rms: float = 0.0


class AccuracyCheck:
    """The oracle and the baselines' bounds for one input set, computed once; `violation`
    then judges any number of produced output lists against them."""

    def __init__(
        self,
        declaration: OperatorDeclaration,
        reference: list[torch.Tensor],
        exact: list[torch.Tensor] | None = None,
        stock: list[torch.Tensor] | None = None,
        terms: list[torch.Tensor] | Callable[[], list[torch.Tensor]] | None = None,
    ) -> None:
        """From outputs computed elsewhere: the reference's in the model dtype, and for
        `no_less_accurate` the FP64 oracle's, the stock formulation's and the FP64 reference's
        on the inputs' magnitudes (the size of the terms, for the floors) on the same set;
        `terms` may be a function that computes them, called only where a floor could decide."""
        self.declaration = declaration
        self.reference = list(reference)
        self.exact: list[torch.Tensor] = []
        self.bounds: list[OutputBound] = []
        if declaration.contract.mode == "bit_exact":
            return
        if exact is None or stock is None or terms is None:
            raise ValueError("a no_less_accurate contract needs the FP64, stock and term outputs")
        self.exact, self._stock = list(exact), list(stock)
        self._terms = terms if callable(terms) else None
        self._bind(None if callable(terms) else list(terms))

    def _bind(self, terms: list[torch.Tensor] | None) -> None:
        """The bounds, with the floors where the terms are known (none yet otherwise)."""
        floors = terms if terms is not None else [None] * len(self.exact)
        self.bounds = [
            _bound(spec.name, *outputs)
            for spec, *outputs in zip(
                self.declaration.outputs, self.exact, self.reference, self._stock, floors,
                strict=True,
            )
        ]  # fmt: skip

    def _with_floors(self) -> bool:
        """Compute the floors now if they were left for later; whether the bounds changed."""
        if self._terms is None:
            return False
        terms, self._terms = self._terms(), None
        self._bind(list(terms))
        return True

    @classmethod
    def on_inputs(
        cls, declaration: OperatorDeclaration, inputs: list, params: dict | None = None
    ) -> "AccuracyCheck":
        """Run the reference, the FP64 oracle and the stock formulation on copies of
        `inputs` (with `params`, default the declared ones) and keep what the rule needs; the
        FP64 reference on the inputs' magnitudes only where a floor could decide a verdict."""
        params = declaration.params if params is None else params
        with torch.no_grad():
            copies = [_copy(value) for value in inputs]
            reference = list(as_outputs(declaration.reference(*copies, **params)))
            if declaration.contract.mode == "bit_exact":
                return cls(declaration, reference)
            exact = list(fp64_outputs(declaration.reference, copies, params))
            stock = reference
            if declaration.stock is not None:
                stock = list(as_outputs(declaration.stock(*copies, **params)))

        def terms() -> list[torch.Tensor]:
            with torch.no_grad():
                return list(fp64_terms(declaration.reference, copies, params))

        return cls(declaration, reference, exact, stock, terms)

    def violation(self, produced) -> ContractViolation | None:
        """The first output that breaks the rule, or None."""
        produced = list(as_outputs(produced))
        if len(produced) != len(self.reference):
            return ContractViolation(
                output="*",
                reason=f"{len(produced)} outputs, the reference returns {len(self.reference)}",
            )
        for index, (spec, got) in enumerate(zip(self.declaration.outputs, produced, strict=True)):
            found = self.output_violation(index, spec.name, got)
            if found is not None:
                return found
        return None

    def output_violation(self, index: int, name: str, got) -> ContractViolation | None:
        """Whether output `index` keeps the contract: type, dtype and shape, then bits or the
        accuracy bound."""
        expected = self.reference[index]
        layout = layout_violation(name, got, expected)
        if layout is not None:
            return layout
        if self.declaration.contract.mode == "bit_exact":
            return first_bit_difference(name, got.detach().cpu(), expected.detach().cpu())
        exact = self.exact[index]
        figures = error_figures(got, exact, expected)
        bound = self.bounds[index]
        if (figures.rms > bound.rms or figures.max_abs > bound.max_abs) and self._with_floors():
            bound = self.bounds[index]
        if figures.broken:
            return ContractViolation(
                output=name,
                reason=f"NaN/Inf in {figures.broken} elements where the reference is finite",
            )
        if figures.rms > bound.rms or figures.max_abs > bound.max_abs:
            return ContractViolation(output=name, reason=describe_excess(figures, bound))
        return None

    def bad_elements(self, index: int, got: torch.Tensor) -> torch.Tensor:
        """Elements beyond the largest error the rule allows (or broken), for diagnosis."""
        if self.declaration.contract.mode == "bit_exact":
            expected = self.reference[index].to(got.device)
            view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
            same_size = view[got.element_size()]
            return got.contiguous().view(same_size) != expected.contiguous().view(same_size)
        self._with_floors()
        exact = self.exact[index].to(got.device)
        error = torch.sub(got.double(), exact).abs()
        broken = ~torch.isfinite(got.double()) & torch.isfinite(exact)
        return (error > self.bounds[index].max_abs) | broken


def stock_loosening(bound: OutputBound) -> str | None:
    """Why a declared stock formulation is too inaccurate to set a contract, or None."""
    if bound.stock_rms <= max(STOCK_SLACK * bound.reference_rms, bound.floor_rms):
        return None
    return (
        f"the declared stock formulation errs {bound.stock_rms:.3g} (RMS against FP64), more "
        f"than {STOCK_SLACK}x the reference in the model dtype ({bound.reference_rms:.3g}): "
        "a stock formulation may not loosen the operator's own contract"
    )


def describe_excess(figures: ErrorFigures, bound: OutputBound) -> str:
    """The figures against their bounds, naming the baseline they come from."""
    return (
        f"error against FP64 (RMS {figures.rms:.3g}, max {figures.max_abs:.3g}) exceeds the "
        f"bound (RMS {bound.rms:.3g} = {RMS_RATIO}x, max {bound.max_abs:.3g} = {MAX_RATIO}x the "
        f"worse of stock (RMS {bound.stock_rms:.3g}, max {bound.stock_max_abs:.3g}) and the "
        f"reference in the model dtype (RMS {bound.reference_rms:.3g}, max "
        f"{bound.reference_max_abs:.3g}))"
    )


def _copy(value):
    return value.clone() if isinstance(value, torch.Tensor) else value


def _bound(name: str, exact, reference, stock_output, terms) -> OutputBound:
    """The allowance for one output from the two baselines' errors on this set (no floors
    while `terms` is None)."""
    mine = error_figures(reference, exact, reference)
    stock = error_figures(stock_output, exact, reference)
    terms = terms.detach().double() if terms is not None else exact.new_zeros(0)
    finite = terms[torch.isfinite(terms)].abs()
    scale_rms = float(finite.square().mean().sqrt()) if finite.numel() else 0.0
    scale_max = float(finite.max()) if finite.numel() else 0.0
    tiny = torch.finfo(torch.float64).tiny
    return OutputBound(
        output=name,
        floor_rms=RMS_FLOOR * scale_rms,
        rms=RMS_RATIO * max(mine.rms, stock.rms, RMS_FLOOR * scale_rms, tiny),
        max_abs=MAX_RATIO * max(mine.max_abs, stock.max_abs, MAX_FLOOR * scale_max, tiny),
        reference_rms=mine.rms,
        reference_max_abs=mine.max_abs,
        stock_rms=stock.rms,
        stock_max_abs=stock.max_abs,
    )
