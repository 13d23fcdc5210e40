"""NumPy arrays over raw addresses: an object exposing `__array_interface__` with an integer
data pointer (a tensor's `data_ptr()`, say) turns tensor memory into host memory Python can
compute on, with no Torch op at all. NumPy's array constructors are wrapped under every name
the loaded modules give them (before the solution is imported), so a call reached through
`map` still goes through the wrapper; while a checked call runs, an array built from such an
object, by any caller, is recorded and refused.
"""

import sys

from gates.evaluator.detectors.compute_fallback import HostComputeFallback

CONSTRUCTORS = (
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "require", "copy",
)  # fmt: skip


class RawViewTripwires:
    """Wraps NumPy's array constructors; records raw-address views made while active."""

    def __init__(self) -> None:
        import numpy

        self.active = False
        self.findings: list[HostComputeFallback] = []
        self._ndarray = numpy.ndarray
        originals = {}
        for name in CONSTRUCTORS:
            original = getattr(numpy, name, None)
            if original is not None:
                originals[id(original)] = (original, self._wrap(name, original))
        for module in list(sys.modules.values()):
            if not getattr(module, "__name__", "").startswith("numpy"):
                continue
            for attribute, value in list(getattr(module, "__dict__", {}).items()):
                entry = originals.get(id(value))
                if entry is not None and entry[0] is value:
                    setattr(module, attribute, entry[1])

    def _wrap(self, name, original):
        tripwires = self

        def constructor(*args, **kwargs):
            if tripwires.active and args and tripwires._raw_address(args[0]):
                finding = HostComputeFallback(f"numpy.{name} of an object over a raw address")
                tripwires.findings.append(finding)
                raise PermissionError("NumPy views of raw addresses are not allowed")
            return original(*args, **kwargs)

        constructor.__name__ = name
        return constructor

    def _raw_address(self, value) -> bool:
        if isinstance(value, self._ndarray):
            return False
        interface = getattr(type(value), "__array_interface__", None) or getattr(
            value, "__dict__", {}
        ).get("__array_interface__")
        if isinstance(interface, property):
            interface = getattr(value, "__array_interface__", None)
        data = interface.get("data") if isinstance(interface, dict) else None
        return isinstance(data, tuple) and bool(data) and isinstance(data[0], int)

    def raise_first(self) -> None:
        if self.findings:
            raise self.findings[0]
