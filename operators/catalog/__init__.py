"""The pre-registered operators of the pi0.5 action expert, registered on import.

A registration adds its module here and its declaration to `CATALOG`.
"""

from operators.catalog import rms_norm
from operators.registry import REGISTRY

CATALOG = (rms_norm.DECLARATION,)

for _declaration in CATALOG:
    if _declaration.name not in REGISTRY:
        REGISTRY.register(_declaration)
