"""The pre-registered operators of the pi0.5 action expert, registered on import.

A registration adds its module here and its declaration to `CATALOG`.
"""

from operators import triton_runtime  # noqa: F401,I001  (must precede every kernel definition)
from operators.catalog import (
    ada_rms_norm,
    attention_output,
    gated_down_projection,
    gated_gelu,
    gated_gelu_projection,
    gated_residual,
    gated_residual_norm,
    modulation_over_steps,
    qkv_projection,
    rms_norm,
    rotate_qk,
    split_kv_attention,
    stacked_projection,
)
from operators.registry import REGISTRY

CATALOG = (
    rms_norm.DECLARATION,
    ada_rms_norm.DECLARATION,
    gated_residual.DECLARATION,
    gated_gelu.DECLARATION,
    gated_gelu_projection.DECLARATION,
    qkv_projection.DECLARATION,
    rotate_qk.DECLARATION,
    split_kv_attention.DECLARATION,
    attention_output.DECLARATION,
    stacked_projection.DECLARATION,
    modulation_over_steps.DECLARATION,
    gated_down_projection.DECLARATION,
    gated_residual_norm.DECLARATION,
)

for _declaration in CATALOG:
    REGISTRY.register(_declaration)  # a second declaration under one name raises
