"""What an operator is: its axes, tensors, reference, preferred kernel, contract and workloads.

A declaration is validated on construction, so a bad one never reaches the registry, the
evaluator or an agent's prompt.
"""

import math
from collections.abc import Callable
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..operators.contract import Contract

DTYPES: dict[str, torch.dtype] = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "int32": torch.int32,
    "int64": torch.int64,
}

InputDistribution = Literal["normal", "large", "cancellation"]
DISTRIBUTIONS: tuple[str, ...] = ("normal", "large", "cancellation")


class Axis(BaseModel):
    """A named dimension: `const` (fixed by the model) or `var` (set by each workload). A var
    axis may be the product of others (`product_of`): the rows of a flattened (batch, tokens)
    beside a tensor that keeps both, so every size drawn for it stays consistent."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: Literal["const", "var"]
    value: int | None = Field(default=None, description="the size of a const axis")
    product_of: tuple[str, ...] = Field(
        default=(),
        description="the axes whose sizes multiply to this var axis's size, e.g. (batch, "
        "tokens) for rows; every workload and every drawn size is completed from them",
    )
    description: str = ""

    @model_validator(mode="after")
    def _const_has_value(self) -> "Axis":
        if self.kind == "const" and (self.value is None or self.value < 0):
            raise ValueError(f"axes.{self.name}.value: a const axis needs a size >= 0")
        if self.kind == "var" and self.value is not None:
            raise ValueError(f"axes.{self.name}.value: a var axis takes its size from workloads")
        if self.product_of and self.kind != "var":
            raise ValueError(f"axes.{self.name}.product_of: only a var axis is a product")
        return self


class TensorSpec(BaseModel):
    """One input or output tensor: its axes by name, dtype, and how test inputs are drawn."""

    model_config = ConfigDict(frozen=True)

    name: str
    shape: tuple[str, ...]
    dtype: str = "bfloat16"
    description: str = ""
    init: Literal["normal", "unit_interval", "angle_table"] = Field(
        default="normal",
        description="how inputs are drawn: normal values, values in [0, 1), or cos/sin tables",
    )

    large_scale: float = Field(
        default=64.0,
        gt=0,
        description=(
            "the factor the `large` distribution multiplies this input by; lower it where the "
            "operator's mathematics amplifies magnitude (attention logits grow with q times k)"
        ),
    )

    @model_validator(mode="after")
    def _known_dtype(self) -> "TensorSpec":
        if self.dtype not in DTYPES:
            raise ValueError(f"{self.name}.dtype: unknown dtype {self.dtype!r}")
        return self

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


class Workload(BaseModel):
    """One representative call: a size for every var axis, and its weight in the mean."""

    model_config = ConfigDict(frozen=True)

    name: str
    axes: dict[str, int]
    weight: float = Field(default=1.0, gt=0)
    calls_per_forward: float | None = Field(
        default=None,
        ge=0,
        description="calls of this size in one forward of the model the shapes come from; "
        "promotion weighs the workload by it x its time (None: the weight stands in)",
    )


class OperatorDeclaration(BaseModel):
    """An operator named by its mathematics, with its oracle and its production kernel."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    summary: str
    axes: tuple[Axis, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    params: dict[str, float] = Field(
        default_factory=dict, description="scalar keyword arguments fixed by the model"
    )
    constraints: tuple[str, ...] = ()
    reference: Callable[..., Any] = Field(description="plain eager PyTorch: the oracle")
    preferred: Callable[..., Any] | None = Field(
        default=None, description="the production Triton kernel; None means the reference"
    )
    stock: Callable[..., Any] | None = Field(
        default=None,
        description="what a PyTorch user deploys without this project (profile `stock`): a "
        "stock PyTorch formulation such as SDPA for attention; None means the reference",
    )
    contract: Contract
    library_products: bool = Field(
        default=True,
        description="whether a tuned kernel may call the BLAS products (mm, addmm, bmm, "
        "baddbmm) on operands it prepares; False where the operator is the kernel's own work "
        "(attention)",
    )
    oracle: Literal["reference", "float64"] = Field(
        default="reference",
        description="what the contract compares against: the reference's outputs as written, "
        "or the reference run with every float in FP64 and rounded once to each output's dtype "
        "(for an operator whose own reference misses the exact result by a share of the "
        "contract)",
    )
    workloads: tuple[Workload, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> "OperatorDeclaration":
        axis_names = [axis.name for axis in self.axes]
        _no_duplicates("axes", axis_names)
        _no_duplicates("inputs/outputs", [t.name for t in self.inputs + self.outputs])
        known = set(axis_names)
        for spec in self.inputs + self.outputs:
            for axis in spec.shape:
                if axis not in known:
                    raise ValueError(f"{spec.name}.shape: axis {axis!r} is not declared")
        determined = {axis for spec in self.inputs for axis in spec.shape}
        variable = [axis.name for axis in self.axes if axis.kind == "var"]
        for axis in variable:
            if axis not in determined:
                raise ValueError(f"axes.{axis}: var axis is not determined by any input shape")
        for axis in self.axes:
            for factor in axis.product_of:
                if factor not in known or factor == axis.name:
                    raise ValueError(f"axes.{axis.name}.product_of: {factor!r} is no other axis")
                if next(a for a in self.axes if a.name == factor).product_of:
                    raise ValueError(f"axes.{axis.name}.product_of: {factor!r} is a product")
        for workload in self.workloads:
            missing = [axis for axis in variable if axis not in workload.axes]
            if missing:
                raise ValueError(f"workloads.{workload.name}: missing var axes {missing}")
            unknown = [axis for axis in workload.axes if axis not in variable]
            if unknown:
                raise ValueError(f"workloads.{workload.name}: {unknown} are not var axes")
            if self.completed(workload.axes) != workload.axes:
                raise ValueError(
                    f"workloads.{workload.name}: {workload.axes} breaks a product axis "
                    f"({self.completed(workload.axes)})"
                )
        _no_duplicates("workloads", [w.name for w in self.workloads])
        return self

    def completed(self, axes: dict[str, int]) -> dict[str, int]:
        """Var-axis sizes with each product axis set from its factors (a size drawn for each
        axis on its own, as hidden cases are, is made consistent here)."""
        return completed_axes(self.axes, axes)

    def axis_sizes(self, workload: Workload) -> dict[str, int]:
        """Every axis's size for one workload: const axes plus the workload's var axes."""
        sizes = {axis.name: axis.value for axis in self.axes if axis.kind == "const"}
        sizes.update(self.completed(workload.axes))
        return sizes

    def shape_of(self, spec: TensorSpec, workload: Workload) -> tuple[int, ...]:
        sizes = self.axis_sizes(workload)
        return tuple(sizes[axis] for axis in spec.shape)

    def make_inputs(
        self,
        workload: Workload,
        seed: int = 0,
        distribution: InputDistribution = "normal",
        device: torch.device | str = "cpu",
    ) -> list[torch.Tensor]:
        """Fresh inputs for one call, drawn in FP64 from `seed` by a generator on `device`.

        Drawing on the device keeps large workloads cheap (a CPU draw of a pi0.5 MLP input
        takes seconds); the same seed gives the same values on every device of one type.
        """
        device = torch.device(device)
        generator = torch.Generator(device=device).manual_seed(seed)
        tensors = []
        for spec in self.inputs:
            shape = self.shape_of(spec, workload)
            values = _draw(spec, shape, generator, distribution, device)
            tensors.append(values.to(spec.torch_dtype))
        return tensors

    def make_input_sets(
        self,
        workload: Workload,
        count: int,
        seed: int,
        distribution: InputDistribution = "normal",
        device: torch.device | str = "cpu",
    ) -> list[list[torch.Tensor]]:
        """`count` independent input sets drawn at once (each tensor one batched draw, each
        set a view into it): what `make_inputs` gives, for many sets at the cost of one
        (under `cancellation` the sets share their offset row)."""
        device = torch.device(device)
        generator = torch.Generator(device=device).manual_seed(seed)
        batches = []
        for spec in self.inputs:
            shape = (count, *self.shape_of(spec, workload))
            batches.append(_draw(spec, shape, generator, distribution, device).to(spec.torch_dtype))
        return [[batch[index] for batch in batches] for index in range(count)]

    def run_reference(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Call the reference with the declared params; always a tuple of outputs."""
        return as_outputs(self.reference(*inputs, **self.params))


def completed_axes(axes: tuple[Axis, ...], given: dict[str, int]) -> dict[str, int]:
    """`given` var-axis sizes with each product axis among `axes` set from its factors."""
    sizes = {axis.name: axis.value for axis in axes if axis.kind == "const"}
    sizes.update(given)
    done = dict(given)
    for axis in axes:
        if axis.product_of:
            done[axis.name] = math.prod(sizes[factor] for factor in axis.product_of)
    return done


def as_outputs(result: Any) -> tuple[torch.Tensor, ...]:
    """Normalise a kernel's return value to a tuple of output tensors."""
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def _draw(spec, shape, generator, distribution, device) -> torch.Tensor:
    def draw(sampler, size):
        return sampler(size, generator=generator, dtype=torch.float64, device=device)

    if spec.init == "angle_table":
        angles = draw(torch.rand, shape) * 6.283185307179586
        half = shape[-1] // 2
        table = angles.cos() if spec.name.startswith("cos") else angles.sin()
        if half:
            table[..., half:] = table[..., :half]
        return table
    if spec.init == "unit_interval":
        return draw(torch.rand, shape)
    values = draw(torch.randn, shape)
    if distribution == "large":
        return values * spec.large_scale
    if distribution == "cancellation":
        offset = draw(torch.randn, shape[-1:] or (1,)) * 16
        return offset + values * 2.0**-6
    return values


def _no_duplicates(field: str, names: list[str]) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{field}: duplicate name {name!r}")
        seen.add(name)
