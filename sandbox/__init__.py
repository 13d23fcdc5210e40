"""Fences that every agent session and agent command runs inside (stdlib and docker SDK only)."""

from sandbox.errors import FenceError
from sandbox.fence import get_fence
from sandbox.policy import FencePolicy, ResourceLimits
from sandbox.protocol import Fence, FenceProbe, FenceResult

__all__ = [
    "Fence",
    "FenceError",
    "FencePolicy",
    "FenceProbe",
    "FenceResult",
    "ResourceLimits",
    "get_fence",
]
