"""Identities of what the evaluator relies on, checked cheaply after every call.

The full snapshot names every watched attribute with the identity of its object and, for
functions, of their code and defaults. Reading `__code__` or `__defaults__` raises an audit
event, thousands per snapshot, so each check first compares a fingerprint that reads no
such attribute: the objects of every watched namespace and the referents of every watched
function (its code and defaults among them), fetched with one `gc.get_referents` call. The
fingerprint holds those objects, so none is freed and its address reused by a replacement.
Only when it differs (a real patch, or a lazily made function `__dict__` or warning
registry) is the full snapshot taken and compared by name.

A project module's public tables (a dict, list, set or pydantic model at module level whose
name has no leading underscore, and the tables and models nested in it) are configuration
read at call time, such as a kernel's tuning table or the promotion thresholds: their
contents are watched too, so rewriting one in place (a reference role's `TUNING`, to slow the
baseline; a frozen model through `object.__setattr__`) is a patch like replacing it. Private
module state (a cache that fills as kernels bind) is the module's own and not watched.
"""

import gc
import operator
import sys
import types

from pydantic import BaseModel

_referents = gc.get_referents  # bound before any solution is imported
_is = operator.is_
_MODULE_OF = operator.attrgetter("__module__")
TABLE_TYPES = (dict, list, set)
TABLE_DEPTH = 3  # nested tables followed this deep
# Whose tables are configuration: the project's modules and the reference roles' copies. A
# standard module's tables (`warnings.filters`) change as libraries run; not watched here.
TABLE_OWNERS = ("gates.", "operators.", "_tuned_")  # `loading.DEPLOYED_PREFIX`


class IdentitySnapshot:
    """Identities of named objects and of every attribute of watched modules and classes."""

    def __init__(
        self,
        paths: tuple[str, ...],
        modules: list[types.ModuleType],
        classes: tuple[str, ...] = (),
    ) -> None:
        self.paths = paths
        self.modules = modules
        self.classes = classes
        fingerprint = _Fingerprint(self)
        self.recorded = self._take()
        self._fingerprint = fingerprint

    def _take(self) -> dict[str, tuple]:
        taken = {path: _identity(_resolve(path)) for path in self.paths}
        for path in self.classes:
            for attribute, member in list(vars(_resolve(path)).items()):
                taken[f"{path}.{attribute}"] = _identity(member)
        for module in self.modules:
            for name, value in list(vars(module).items()):
                if name.startswith("__") and name != "__call__":
                    continue
                taken[f"{module.__name__}.{name}"] = _identity(value)
                if _is_table(module, name, value):
                    tables = _tables([_table_of(value)])
                    taken[f"{module.__name__}.{name}[...]"] = tuple(map(id, _referents(*tables)))
                if isinstance(value, type) and value.__module__ == module.__name__:
                    for attribute, member in list(vars(value).items()):
                        taken[f"{module.__name__}.{name}.{attribute}"] = _identity(member)
        return taken

    def changed(self) -> list[str]:
        """Names whose identity differs from the snapshot (added and removed ones too)."""
        if self._fingerprint.unchanged(self):
            return []
        fingerprint = _Fingerprint(self)  # taken before `now`: a later change is seen later
        now = self._take()
        if now == self.recorded:  # only something no name watches changed
            self._fingerprint = fingerprint
            return []
        names = set(now) | set(self.recorded)
        return sorted(n for n in names if now.get(n) != self.recorded.get(n))


class _Fingerprint:
    """Everything `_take` reads, without reading a function's attributes: the objects of
    the paths and namespaces and the referents of their functions (compared by identity),
    and the few values compared by equality (module names, class `__module__`s)."""

    def __init__(self, snapshot: IdentitySnapshot) -> None:
        self.path_objects, self.path_values, path_functions = _path_parts(snapshot.paths)
        self.modules = snapshot.modules
        self.module_names = [module.__name__ for module in self.modules]
        self.module_classes, owners = [], []  # every class value of a watched module
        for module, name in zip(self.modules, self.module_names, strict=True):
            for value in vars(module).values():
                if isinstance(value, type):
                    self.module_classes.append(value)
                    owners.append(name)
        self.class_modules = [_MODULE_OF(cls) for cls in self.module_classes]
        self.defined_classes = [  # those `_take` walks into: defined in that module
            cls
            for cls, owner, defined in zip(
                self.module_classes, owners, self.class_modules, strict=True
            )
            if defined == owner
        ]
        self.members = self._members(snapshot)
        self.tables = _tables(_public_tables(self.modules))
        self.table_contents = _referents(*self.tables)
        functions, self.odd_wrappers = _functions_of(self.members[1])
        self.functions = path_functions + functions
        self.referents = _referents(*self.functions)
        self.odd_identities = [_identity(wrapper) for wrapper in self.odd_wrappers]

    def _members(self, snapshot: IdentitySnapshot) -> tuple[list, list]:
        """(names, objects) of every watched namespace, in order."""
        namespaces = [vars(_resolve(path)) for path in snapshot.classes]
        namespaces += [vars(module) for module in self.modules]
        namespaces += [vars(cls) for cls in self.defined_classes]
        names, objects = [], []
        for namespace in namespaces:
            names.extend(namespace)
            objects.extend(namespace.values())
        return names, objects

    def unchanged(self, snapshot: IdentitySnapshot) -> bool:
        """True when everything `_take` would read is the very object recorded. The recorded
        classes and functions stand for the current ones once the namespaces' objects are."""
        objects, values, _ = _path_parts(snapshot.paths)
        names, members = self._members(snapshot)
        return (
            _same(objects, self.path_objects)
            and values == self.path_values
            and _same(names, self.members[0])
            and _same(members, self.members[1])
            and [module.__name__ for module in self.modules] == self.module_names
            and [_MODULE_OF(cls) for cls in self.module_classes] == self.class_modules
            and _same(_referents(*self.functions), self.referents)
            and _same(_referents(*self.tables), self.table_contents)
            and [_identity(wrapper) for wrapper in self.odd_wrappers] == self.odd_identities
        )


def _public_tables(modules: list[types.ModuleType]) -> list:
    """Every public module-level table of the project's modules."""
    return [
        _table_of(value)
        for module in modules
        for name, value in list(vars(module).items())
        if _is_table(module, name, value)
    ]


def _is_table(module: types.ModuleType, name: str, value) -> bool:
    """A dict, list or set, or a pydantic model (frozen ones yield to `object.__setattr__`),
    at module level, public, in a module of TABLE_OWNERS."""
    return (
        (type(value) in TABLE_TYPES or isinstance(value, BaseModel))
        and not name.startswith("_")
        and f"{module.__name__}.".startswith(TABLE_OWNERS)
    )


def _table_of(value):
    """What holds a value's contents: itself, or a model's field dict."""
    return vars(value) if isinstance(value, BaseModel) else value


def _tables(tables: list) -> list:
    """The tables and the tables nested in them (in tuples and models too), TABLE_DEPTH
    levels deep."""
    found, level = list(tables), list(tables)
    for _ in range(TABLE_DEPTH):
        level = [
            _table_of(value)
            for value in _referents(*level)
            if type(value) in TABLE_TYPES or type(value) is tuple or isinstance(value, BaseModel)
        ]
        found += [value for value in level if type(value) in TABLE_TYPES]
    return found


def _path_parts(paths: tuple[str, ...]) -> tuple[list, list, list]:
    """(objects, values, functions) behind the paths' identities. A bound method is made
    afresh at every lookup: its owner and function stand for it."""
    objects, values, functions = [], [], []
    for path in paths:
        value = _resolve(path)
        kind = type(value)
        if kind is types.MethodType:
            objects += [value.__self__, value.__func__]
        else:
            objects.append(value)
        if kind is types.FunctionType:
            functions.append(value)
        elif kind is classmethod or kind is staticmethod or kind is types.MethodType:
            wrapped, odd = _functions_of([value])
            functions += wrapped
            values += [_identity(wrapper) for wrapper in odd]
    return objects, values, functions


def _functions_of(objects: list) -> tuple[list, list]:
    """The objects whose referents carry what `_identity` reads (functions, and class and
    static methods, whose function `__init__` can replace in place), and the wrappers of
    something that is not a plain function (their identity is read in full)."""
    functions, odd = [], []
    for value in objects:
        kind = type(value)
        if kind is types.FunctionType:
            functions.append(value)
        elif kind is classmethod or kind is staticmethod or kind is types.MethodType:
            if kind is not types.MethodType:
                functions.append(value)
            if type(value.__func__) is types.FunctionType:
                functions.append(value.__func__)
            else:
                odd.append(value)
    return functions, odd


def _same(objects: list, recorded: list) -> bool:
    return len(objects) == len(recorded) and all(map(_is, objects, recorded))


def _resolve(path: str):
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is not None:
            value = module
            for attribute in parts[split:]:
                try:
                    value = getattr(value, attribute, None)
                except Exception:  # a lazy attribute that cannot start here (no GPU driver)
                    return None
            return value
    return None


def _identity(value) -> tuple:
    """The object's id, plus its code and defaults for functions and wrapped functions (a
    rewritten `__code__` keeps the function object)."""
    kind = type(value)
    if kind is types.FunctionType:
        return (id(value), id(value.__code__), id(value.__defaults__))
    if kind is classmethod or kind is staticmethod or kind is types.MethodType:
        function = value.__func__
        code = getattr(function, "__code__", None)
        # a bound method is made afresh at every lookup: its owner stands in for its id
        holder = value.__self__ if kind is types.MethodType else value
        return (id(holder), id(function), id(code), id(getattr(function, "__defaults__", None)))
    return (id(value),)
