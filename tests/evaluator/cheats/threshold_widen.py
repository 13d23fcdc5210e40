"""Cheat: lower the promotion rule's bar in the process that measures it. At import it sets
the required gain of the frozen thresholds model to -100% and the noise margin to infinity
(`object.__setattr__` passes a frozen model by), then computes honestly; any time would then
promote."""

import sys

from .rms_kernel import honest

_promotion = sys.modules.get("gates.evaluator.promotion")
if _promotion is not None:
    object.__setattr__(_promotion.THRESHOLDS, "required_gain", -1.0)
    object.__setattr__(_promotion.THRESHOLDS, "noise_margin", float("inf"))


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
