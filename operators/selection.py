"""Which implementation each operator call runs, under a `kernel_profile`.

`none` runs the preferred (production) kernel, `torch` the reference, `stock` what a PyTorch
user deploys without this project (the reference, or the operator's stock PyTorch formulation
such as SDPA for attention), `auto` or a profile name the verified tuned kernels with the
preferred kernel as fallback. Resolution happens once
per selection, before any compiled region, so a traced call only reads a cache: the
selection's table of what a compiled graph calls (`compiled`). That table belongs to the
selection object, so `torch.compile`'s guards on it see a change of profile and trace again;
a compiled graph never keeps running the kernels of a profile no longer active.
"""

import contextlib
import functools
import itertools
import os
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from operators.audit import Audit, audit_rate_from_environment
from operators.declaration import OperatorDeclaration
from operators.environment import KernelEnvironment, current_kernel_environment
from operators.errors import OperatorError, ProfileError
from operators.library import preferred_op, tuned_op
from operators.profiles import TUNED_ROOT, TunedKernel, load_profile, matching_profile
from operators.registry import REGISTRY, OperatorRegistry

PROFILE_VARIABLE = "CONTROLLER_KERNEL_PROFILE"
BUILTIN_PROFILES: tuple[str, ...] = ("none", "torch", "stock", "auto")
"""Profiles every tree has; an installed profile cannot take one of these names."""


class ResolvedOperator:
    """One operator's resolved implementation: a tuned kernel where it applies, else preferred;
    with an `audit`, the tuned kernel's calls go through it."""

    def __init__(
        self,
        name: str,
        preferred: Callable[..., Any],
        tuned: TunedKernel | None,
        audit: Audit | None = None,
        declaration: OperatorDeclaration | None = None,
    ):
        self.name = name
        self.preferred = preferred
        self.tuned = tuned
        self.audit = audit if audit is not None and declaration is not None else None
        self.declaration = declaration

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.tuned is not None and self.tuned.applies(*args, **kwargs):
            if self.audit is not None:
                return self.audit.call(self.declaration, self.tuned.kernel, args, kwargs)
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
        allow_unverified: bool = False,
        audit_rate: float | None = None,
    ) -> None:
        """`allow_unverified` loads an installed profile that `verify` has not passed as it is
        now: for the commands that verify it, never for deployment. `audit_rate` (default:
        `CONTROLLER_AUDIT_RATE`, else 0) audits that share of tuned calls (`operators.audit`)."""
        self.profile = profile
        self.allow_unverified = allow_unverified
        rate = audit_rate_from_environment(os.environ) if audit_rate is None else audit_rate
        self.audit = Audit(rate, profile) if rate else None
        self.registry = registry
        self.tuned_root = tuned_root
        self._environment = environment
        self._tuned: dict[str, TunedKernel] | None = None
        self._resolved: dict[str, ResolvedOperator] = {}
        self._compiled: dict[str, Callable[..., Any]] = {}
        self.number = next(_numbers)
        _selections[self.number] = self

    def resolve(self, name: str) -> ResolvedOperator:
        resolved = self._resolved.get(name)
        if resolved is None:
            resolved = self._resolve(name)
            self._resolved[name] = resolved
        return resolved

    def prepare(self) -> "KernelSelection":
        """Resolve every registered operator now, for eager calls and compiled graphs."""
        for name in self.registry.names():
            self.resolve(name)
            if name not in self._compiled:
                self._compiled[name] = self._compiled_call(name)
        return self

    def compiled(self, name: str) -> Callable[..., Any]:
        """What a compiled graph calls for `name`: a custom op, or the reference to trace."""
        try:
            return self._compiled[name]
        except KeyError:
            raise OperatorError(
                f"operator {name!r} was not resolved before compiling under kernel_profile "
                f"{self.profile!r}; activate the profile with use_kernel_profile() first"
            ) from None

    def _compiled_call(self, name: str) -> Callable[..., Any]:
        resolved = self._resolved[name]
        declaration = self.registry.declaration(name)
        if self.profile == "torch":
            return declaration.reference
        if self.profile == "stock":
            return declaration.stock or declaration.reference
        if declaration.preferred is None and resolved.tuned is None:
            return declaration.reference
        try:
            if resolved.tuned is not None:
                return functools.partial(tuned_op(declaration, _run_tuned), selection=self.number)
            return preferred_op(declaration)
        except Exception as error:  # eager calls must not depend on what compiling needs
            return _not_compilable(name, f"{type(error).__name__}: {error}".splitlines()[0])

    def _resolve(self, name: str) -> ResolvedOperator:
        declaration = self.registry.declaration(name)
        preferred = declaration.preferred or declaration.reference
        if self.profile == "torch":
            return ResolvedOperator(name, declaration.reference, None)
        if self.profile == "stock":
            return ResolvedOperator(name, declaration.stock or declaration.reference, None)
        if self.profile == "none":
            return ResolvedOperator(name, preferred, None)
        tuned = self._tuned_kernels().get(name)
        return ResolvedOperator(name, preferred, tuned, self.audit, declaration)

    def _tuned_kernels(self) -> dict[str, TunedKernel]:
        if self._tuned is None:
            environment = self._environment or current_kernel_environment()
            name = self.profile
            if name == "auto":
                name = (
                    matching_profile(self.tuned_root, environment, self.allow_unverified)
                    if _has_root(self)
                    else None
                )
            if name is None:
                self._tuned = {}
            else:
                folder = self.tuned_root / name
                if not folder.is_dir():
                    raise ProfileError(
                        f"kernel profile {name!r} is not installed in {self.tuned_root}"
                    )
                self._tuned = load_profile(folder, environment, self.allow_unverified)
        return self._tuned


def _has_root(selection: KernelSelection) -> bool:
    return selection.tuned_root.is_dir()


def _not_compilable(name: str, reason: str) -> Callable[..., Any]:
    """Stands in for an operator whose custom op could not be defined: compiling it fails
    with the reason, eager calls are unaffected."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperatorError(f"operator {name!r} cannot be compiled: {reason}")

    return refuse


_numbers = itertools.count(1)
_selections: weakref.WeakValueDictionary[int, KernelSelection] = weakref.WeakValueDictionary()


def _run_tuned(number: int, name: str, *args: Any) -> Any:
    """A tuned op's body at run time: the traced selection's resolution of `name`."""
    selection = _selections.get(number)
    if selection is None:
        raise OperatorError(
            f"a compiled graph calls tuned {name!r} of a kernel selection that no longer "
            "exists; compile again under the active profile"
        )
    return selection.resolve(name)(*args)


_active: KernelSelection | None = None


def active_selection() -> KernelSelection:
    """The selection calls go through: set by `use_kernel_profile`, else from the environment."""
    global _active
    if _active is None:
        _active = KernelSelection(os.environ.get(PROFILE_VARIABLE, "none")).prepare()
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
