"""A FlashAttention-class kernel for `split_kv_attention`, shipped as a scripted tune session.

Why it is faster than the production kernel: all query heads of one key/value head are rows of
one program (the action call's 8 heads x 50 tokens are 400 rows), so K/V are read once per
group of rows instead of once per head; and the keys are split among programs (flash-decoding)
so that a 50-token call fills the GPU at batch 1, with a second small launch that merges the
slices' softmax statistics. A call whose rows already fill the GPU is not split.

The parts, in the order a reader takes them: `kernels` (the two Triton kernels), `launch_plan`
(the tuned settings and one call's blocks and key slices), `attention` (the launcher and the
operator's entry point). `benchmarks/attention_session.py` joins them, in that order, into the
one operator file the session ships.
"""

from .attention import attend, split_kv_attention_triton
from .launch_plan import INTERPRETED, TUNING, TUNING_SPACE, Plan, settings_for

__all__ = [
    "INTERPRETED",
    "TUNING",
    "TUNING_SPACE",
    "Plan",
    "attend",
    "settings_for",
    "split_kv_attention_triton",
]
