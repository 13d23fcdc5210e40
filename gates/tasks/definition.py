"""The FlashInfer Trace `Definition` entity: what an operator computes and on which tensors."""

import ast
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gates.python_source import parse_python

TraceDtype = Literal[
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3",
    "float8_e5m2",
    "int64",
    "int32",
    "int16",
    "int8",
    "bool",
]


class ConstAxis(BaseModel):
    """An axis whose size the model fixes."""

    model_config = ConfigDict(frozen=True)

    type: Literal["const"] = "const"
    value: int = Field(gt=0)
    description: str | None = None


class VarAxis(BaseModel):
    """An axis whose size each workload sets."""

    model_config = ConfigDict(frozen=True)

    type: Literal["var"] = "var"
    parent: str | None = None
    description: str | None = None


class TraceTensor(BaseModel):
    """One input or output: its axes by name (empty for a scalar) and its dtype."""

    model_config = ConfigDict(frozen=True)

    shape: list[str]
    dtype: TraceDtype
    description: str | None = None


class Definition(BaseModel):
    """A FlashInfer Trace definition; `reference` is Python source with a top-level `run`."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    op_type: str = Field(min_length=1)
    axes: dict[str, ConstAxis | VarAxis] = Field(min_length=1)
    inputs: dict[str, TraceTensor] = Field(min_length=1)
    outputs: dict[str, TraceTensor] = Field(min_length=1)
    reference: str = Field(min_length=1)
    description: str | None = None
    tags: list[str] | None = None
    constraints: list[str] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Definition":
        for role, tensors in (("inputs", self.inputs), ("outputs", self.outputs)):
            for name, tensor in tensors.items():
                unknown = [axis for axis in tensor.shape if axis not in self.axes]
                if unknown:
                    raise ValueError(f"{role}.{name}.shape: undeclared axes {unknown}")
        try:
            module = parse_python(self.reference)
        except SyntaxError as error:
            raise ValueError(f"reference: not valid Python ({error})") from None
        if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in module.body):
            raise ValueError("reference: needs a top-level function named 'run'")
        for constraint in self.constraints or ():
            try:
                parse_python(constraint, mode="eval")
            except SyntaxError:
                raise ValueError(
                    f"constraints: {constraint!r} is not a Python expression"
                ) from None
        return self

    def var_axes(self) -> list[str]:
        return [name for name, axis in self.axes.items() if axis.type == "var"]
