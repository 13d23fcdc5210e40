"""The FlashInfer Trace `Workload` entity: concrete var-axis sizes and how inputs are made."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RandomInput(BaseModel):
    """The input is drawn at random by the evaluator."""

    model_config = ConfigDict(frozen=True)

    type: Literal["random"] = "random"


class ScalarInput(BaseModel):
    """The input is a fixed scalar (an operator parameter such as `eps`)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["scalar"] = "scalar"
    value: int | float | bool


class SafetensorsInput(BaseModel):
    """The input is a tensor stored in a safetensors file of the package (a captured call's)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["safetensors"] = "safetensors"
    path: str = Field(min_length=1)
    tensor_key: str = Field(min_length=1)


class Workload(BaseModel):
    """One benchmarked call shape; `uuid` is stable so traces can point back at it."""

    model_config = ConfigDict(frozen=True)

    uuid: str = Field(min_length=1)
    axes: dict[str, int]
    inputs: dict[str, RandomInput | ScalarInput | SafetensorsInput]
