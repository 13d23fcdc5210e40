"""Fences that every agent session and agent command runs inside (stdlib and docker SDK only)."""

from sandbox.errors import FenceError
from sandbox.fence import Fence, FenceProbe, FenceResult, get_fence
from sandbox.policy import FencePolicy, ResourceLimits

__all__ = [
    "Fence",
    "FenceError",
    "FencePolicy",
    "FenceProbe",
    "FenceResult",
    "ResourceLimits",
    "get_fence",
]
