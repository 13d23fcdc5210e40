"""The operator registry: every operator's declaration, looked up by its mathematical name."""

from collections.abc import Iterator

from operators.declaration import OperatorDeclaration
from operators.errors import OperatorError


class OperatorRegistry:
    """Holds declarations; refuses a second operator with a name already taken."""

    def __init__(self) -> None:
        self._declarations: dict[str, OperatorDeclaration] = {}

    def register(self, declaration: OperatorDeclaration) -> OperatorDeclaration:
        if declaration.name in self._declarations:
            raise OperatorError(f"operator {declaration.name!r} is already registered")
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


REGISTRY = OperatorRegistry()
