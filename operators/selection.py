"""Which implementation each operator call runs, under a `kernel_profile`.

`none` runs the preferred (production) kernel, `torch` the reference, `auto` or a profile
name the verified tuned kernels with the preferred kernel as fallback. Resolution happens once
per selection, before any compiled region, so a traced call only reads a cache.
"""

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from operators.environment import KernelEnvironment, current_kernel_environment
from operators.errors import ProfileError
from operators.profiles import TUNED_ROOT, TunedKernel, load_profile, matching_profile
from operators.registry import REGISTRY, OperatorRegistry

PROFILE_VARIABLE = "CONTROLLER_KERNEL_PROFILE"


class ResolvedOperator:
    """One operator's resolved implementation: a tuned kernel where it applies, else preferred."""

    def __init__(self, name: str, preferred: Callable[..., Any], tuned: TunedKernel | None):
        self.name = name
        self.preferred = preferred
        self.tuned = tuned

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.tuned is not None and self.tuned.applies(*args, **kwargs):
            return self.tuned.kernel(*args, **kwargs)
        return self.preferred(*args, **kwargs)


class KernelSelection:
    """Resolves every registered operator under one profile and caches the result."""

    def __init__(
        self,
        profile: str = "none",
        registry: OperatorRegistry = REGISTRY,
        tuned_root: Path = TUNED_ROOT,
        environment: KernelEnvironment | None = None,
    ) -> None:
        self.profile = profile
        self.registry = registry
        self.tuned_root = tuned_root
        self._environment = environment
        self._tuned: dict[str, TunedKernel] | None = None
        self._resolved: dict[str, ResolvedOperator] = {}

    def resolve(self, name: str) -> ResolvedOperator:
        resolved = self._resolved.get(name)
        if resolved is None:
            resolved = self._resolve(name)
            self._resolved[name] = resolved
        return resolved

    def prepare(self) -> "KernelSelection":
        """Resolve every registered operator now (call before compiling a model)."""
        for name in self.registry.names():
            self.resolve(name)
        return self

    def _resolve(self, name: str) -> ResolvedOperator:
        declaration = self.registry.declaration(name)
        preferred = declaration.preferred or declaration.reference
        if self.profile == "torch":
            return ResolvedOperator(name, declaration.reference, None)
        if self.profile == "none":
            return ResolvedOperator(name, preferred, None)
        return ResolvedOperator(name, preferred, self._tuned_kernels().get(name))

    def _tuned_kernels(self) -> dict[str, TunedKernel]:
        if self._tuned is None:
            environment = self._environment or current_kernel_environment()
            name = self.profile
            if name == "auto":
                name = matching_profile(self.tuned_root, environment) if _has_root(self) else None
            if name is None:
                self._tuned = {}
            else:
                folder = self.tuned_root / name
                if not folder.is_dir():
                    raise ProfileError(
                        f"kernel profile {name!r} is not installed in {self.tuned_root}"
                    )
                self._tuned = load_profile(folder, environment)
        return self._tuned


def _has_root(selection: KernelSelection) -> bool:
    return selection.tuned_root.is_dir()


_active: KernelSelection | None = None


def active_selection() -> KernelSelection:
    """The selection calls go through: set by `use_kernel_profile`, else from the environment."""
    global _active
    if _active is None:
        _active = KernelSelection(os.environ.get(PROFILE_VARIABLE, "none"))
    return _active


@contextlib.contextmanager
def use_kernel_profile(profile: str | KernelSelection) -> Iterator[KernelSelection]:
    """Run a block under another profile, resolved up front; restores the previous one."""
    global _active
    previous = _active
    selection = profile if isinstance(profile, KernelSelection) else KernelSelection(profile)
    _active = selection.prepare()
    try:
        yield selection
    finally:
        _active = previous
