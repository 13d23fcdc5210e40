"""The launch settings a kernel's sources declare: `TUNING` (the point in use) and
`TUNING_SPACE` (the values a search may try), read and rewritten without importing anything.

Both are module-level dict literals in the solution's entry file, so a candidate that changes
only its launch settings is a one-assignment edit of the same sources, judged like any other.
"""

import ast
import itertools
from typing import Any

from pydantic import BaseModel, ConfigDict

from gates.python_source import parse_python

POINT_NAME = "TUNING"
SPACE_NAME = "TUNING_SPACE"
LINE_LENGTH = 100

Point = dict[str, Any]


class DeclaredSettings(BaseModel):
    """What one source file declares; either may be None."""

    model_config = ConfigDict(frozen=True)

    point: Point | None = None
    space: dict[str, tuple[Any, ...]] | None = None

    def neighbours(self, around: Point, reach: int = 1) -> list[Point]:
        """Points differing from `around` in exactly `reach` settings, nearest first.

        A step is the distance between two values' places in the declared list, so a search
        tries the next value up and down of every setting before any larger jump; ties keep
        the space's order of settings, the step up before the step down. Where the point keeps
        its settings per regime (every value a dict, a tile per row regime say), the space
        applies to each regime's settings: a setting is one regime's one name.
        """
        if not self.space:
            return []
        found = []
        for changed in itertools.combinations(self.varied(around), reach):
            choices = [
                [value for value in self.space[key[1]] if value != _value(around, key)]
                for key in changed
            ]
            for values in itertools.product(*choices):
                settings = dict(zip(changed, values, strict=True))
                steps = [self._step(around, key, value) for key, value in settings.items()]
                distance = (sum(abs(step) for step in steps), sum(step < 0 for step in steps))
                point = _with_values(around, settings)
                found.append((distance, len(found), point))
        return [point for _, _, point in sorted(found, key=lambda item: item[:2])]

    def varied(self, around: Point) -> list[tuple[str | None, str]]:
        """(regime, name) of every setting the space varies; regime None for a flat point."""
        if per_regime(around):
            return [
                (regime, name)
                for regime, settings in around.items()
                for name in self.space or {}
                if name in settings
            ]
        return [(None, name) for name in self.space or {}]

    def _step(self, around: Point, key: tuple[str | None, str], value: Any) -> int:
        """How many places along its declared list `value` lies from `around`'s setting."""
        options = (self.space or {})[key[1]]
        current = _value(around, key)
        return options.index(value) - (options.index(current) if current in options else 0)


def per_regime(point: Point | None) -> bool:
    """Whether `point` keeps its settings per regime: every value a dict of settings."""
    return bool(point) and all(isinstance(value, dict) for value in point.values())


def _value(point: Point, key: tuple[str | None, str]) -> Any:
    regime, name = key
    return (point.get(regime) or {}).get(name) if regime is not None else point.get(name)


def _with_values(point: Point, values: dict[tuple[str | None, str], Any]) -> Point:
    """`point` with each (regime, name) setting replaced; regimes are copied, not shared."""
    changed = {
        key: dict(value) if isinstance(value, dict) else value for key, value in point.items()
    }
    for (regime, name), value in values.items():
        if regime is None:
            changed[name] = value
        else:
            changed[regime][name] = value
    return changed


def declared_settings(source: str) -> DeclaredSettings:
    """The literal `TUNING` and `TUNING_SPACE` assignments of a module's source."""
    values: dict[str, Any] = {}
    for node in _assignments(parse_python(source)):
        try:
            values[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            continue
    point, space = values.get(POINT_NAME), values.get(SPACE_NAME)
    if space is not None:
        space = {name: tuple(options) for name, options in space.items()}
    return DeclaredSettings(
        point=point if isinstance(point, dict) else None,
        space=space if isinstance(space, dict) else None,
    )


def with_point(source: str, point: Point) -> str:
    """The source with its `TUNING` assignment replaced by `point`, laid out as ruff would."""
    for node in _assignments(parse_python(source)):
        if node.targets[0].id != POINT_NAME:
            continue
        lines = source.splitlines(keepends=True)
        before = "".join(lines[: node.lineno - 1])
        after = "".join(lines[node.end_lineno :])
        return before + render_point(point) + "\n" + after
    raise ValueError(f"the source has no {POINT_NAME} assignment to rewrite")


def render_point(point: Point) -> str:
    """`TUNING = {...}` on one line when it fits, else one setting per line (a setting whose
    value is a dict, a tile per regime say, split one level further where its line is long)."""
    items = [f"{_literal(name)}: {_literal(value)}" for name, value in point.items()]
    single = f"{POINT_NAME} = {{{', '.join(items)}}}"
    if len(single) <= LINE_LENGTH:
        return single
    lines = [
        _split_item(name, value, item)
        for (name, value), item in zip(point.items(), items, strict=True)
    ]
    return f"{POINT_NAME} = {{\n" + "".join(lines) + "}"


def _split_item(name: str, value: Any, item: str) -> str:
    if len(item) + 5 <= LINE_LENGTH or not isinstance(value, dict):  # "    " + item + ","
        return f"    {item},\n"
    inner = "".join(f"        {_literal(k)}: {_literal(v)},\n" for k, v in value.items())
    return f"    {_literal(name)}: {{\n{inner}    }},\n"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):  # as ruff writes it: double quotes, no trailing comma
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _assignments(module: ast.Module) -> list[ast.Assign]:
    return [
        node
        for node in module.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in (POINT_NAME, SPACE_NAME)
    ]
