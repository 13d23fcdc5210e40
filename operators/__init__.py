"""Runtime layer: operator declarations, the registry, kernel selection and tuned profiles.

Call sites use `from operators import ops` and call `ops.<name>(...)`; importing the package
registers the catalog.
"""

from operators import triton_runtime  # noqa: F401,I001  (selects the interpreter before any kernel)
import operators.catalog  # noqa: E402,F401,I001  (registers the pre-registered operators)
from operators.contract import Contract, ContractViolation
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.errors import OperatorError, ProfileError
from operators.ops import ops, record_registry_calls, record_registry_hits
from operators.registry import REGISTRY, OperatorRegistry
from operators.selection import KernelSelection, active_selection, use_kernel_profile

__all__ = [
    "REGISTRY",
    "Axis",
    "Contract",
    "ContractViolation",
    "KernelSelection",
    "OperatorDeclaration",
    "OperatorError",
    "OperatorRegistry",
    "ProfileError",
    "TensorSpec",
    "Workload",
    "active_selection",
    "ops",
    "record_registry_calls",
    "record_registry_hits",
    "use_kernel_profile",
]

ops.bind(REGISTRY.names())
