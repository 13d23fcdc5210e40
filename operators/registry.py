"""The operator registry: every operator's declaration, looked up by its mathematical name."""

from collections.abc import Iterator

from operators.declaration import OperatorDeclaration
from operators.errors import OperatorError


class OperatorRegistry:
    """Holds declarations; refuses a second operator with a name already taken."""

    def __init__(self) -> None:
        self._declarations: dict[str, OperatorDeclaration] = {}

    def register(self, declaration: OperatorDeclaration) -> OperatorDeclaration:
        """Add `declaration`; registering the same object again is a no-op (a re-imported
        catalog), a second declaration under a taken name is an error, never a silent choice."""
        registered = self._declarations.get(declaration.name)
        if registered is declaration:
            return declaration
        if registered is not None:
            raise OperatorError(
                f"operator {declaration.name!r} is already registered (declared in "
                f"{_declared_in(registered)}, again in {_declared_in(declaration)}); "
                "one name takes one declaration"
            )
        self._declarations[declaration.name] = declaration
        return declaration

    def declaration(self, name: str) -> OperatorDeclaration:
        try:
            return self._declarations[name]
        except KeyError:
            known = ", ".join(sorted(self._declarations))
            raise OperatorError(f"unknown operator {name!r} (registered: {known})") from None

    def names(self) -> list[str]:
        return sorted(self._declarations)

    def __contains__(self, name: object) -> bool:
        return name in self._declarations

    def __iter__(self) -> Iterator[OperatorDeclaration]:
        return iter(self._declarations[name] for name in self.names())


def _declared_in(declaration: OperatorDeclaration) -> str:
    return getattr(declaration.reference, "__module__", None) or "an unknown module"


REGISTRY = OperatorRegistry()
