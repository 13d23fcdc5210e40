"""The identity snapshot's cheap check sees every replacement the full snapshot names, and
reads no function attribute (no audit event) while nothing changed."""

import sys
import types

import pytest

from gates.evaluator.detectors.identity_snapshot import IdentitySnapshot

MODULE = "_tuned_identity_subject"  # a reference role's module: its tables are watched


def _helper(value, scale=2):
    return value * scale


def _other(value, scale=3):
    return value - scale


def _counter_class() -> type:
    class Counter:
        """A class defined in the watched module: its attributes are watched too."""

        def step(self):
            return 1

        @classmethod
        def make(cls):
            return cls()

        @staticmethod
        def unit():
            return 1

    Counter.__module__ = MODULE
    return Counter


@pytest.fixture
def subject():
    """A watched module in `sys.modules`: a function whose code only it holds, a class
    defined there and a bound method."""
    module = types.ModuleType(MODULE)
    code = _helper.__code__.replace(co_name="helper")
    module.helper = types.FunctionType(code, globals(), "helper", tuple([2]))
    module.Counter = _counter_class()
    module.bound = module.Counter().step
    module.TUNING = {"num_warps": 4, "space": ([1, 2], {"stages": [3]})}  # a public table
    module._cache = {}  # private module state
    sys.modules[MODULE] = module
    yield module
    del sys.modules[MODULE]


def _snapshot(module) -> IdentitySnapshot:
    return IdentitySnapshot((f"{MODULE}.helper", f"{MODULE}.Counter.make"), [module])


def _replace_code(module):
    module.helper.__code__ = _other.__code__


def _replace_defaults(module):
    module.helper.__defaults__ = (5,)


def _replace_global(module):
    module.helper = types.FunctionType(_helper.__code__, globals(), "helper", (2,))


def _replace_method(module):
    module.Counter.step = lambda self: 2


def _reinit_classmethod(module):
    vars(module.Counter)["make"].__init__(_other)


def _rewrite_static_code(module):
    vars(module.Counter)["unit"].__func__.__code__ = (lambda: 2).__code__


def _add_global(module):
    module.extra = 1


def _rebind_module(module):
    module.bound = module.Counter().step


def _rewrite_table(module):
    module.TUNING["num_warps"] = 1


def _rewrite_nested_table(module):
    module.TUNING["space"][1]["stages"].append(4)


@pytest.mark.parametrize(
    "patch, name",
    [
        (_replace_code, f"{MODULE}.helper"),
        (_replace_defaults, f"{MODULE}.helper"),
        (_replace_global, f"{MODULE}.helper"),
        (_replace_method, f"{MODULE}.Counter.step"),
        (_reinit_classmethod, f"{MODULE}.Counter.make"),
        (_rewrite_static_code, f"{MODULE}.Counter.unit"),
        (_add_global, f"{MODULE}.extra"),
        (_rebind_module, f"{MODULE}.bound"),
        (_rewrite_table, f"{MODULE}.TUNING[...]"),
        (_rewrite_nested_table, f"{MODULE}.TUNING[...]"),
    ],
)
def test_every_replacement_is_named(subject, patch, name):
    snapshot = _snapshot(subject)
    assert snapshot.changed() == []
    patch(subject)
    assert name in snapshot.changed()


def test_a_lazy_function_dict_is_no_change_and_the_check_stays_cheap(subject):
    snapshot = _snapshot(subject)
    assert subject.helper.__dict__ == {}  # made on first access: a new referent
    assert snapshot.changed() == []
    reads, counting = [], [True]

    def count(event, args):
        if counting and event == "object.__getattr__" and args[1] in ("__code__", "__defaults__"):
            reads.append(args[1])

    sys.addaudithook(count)  # cannot be removed: switched off at the end
    try:
        assert snapshot.changed() == []
        assert reads == [], "the unchanged check read function attributes"
        _replace_code(subject)
        assert snapshot.changed() == [f"{MODULE}.helper"]
        assert reads, "a change is named from the full snapshot"
    finally:
        counting.clear()


def test_a_replacement_cannot_reuse_the_recorded_address(subject):
    """The check holds what it recorded, so a defaults tuple made after the recorded one was
    dropped cannot land at its address (tuples are recycled) and pass for it."""
    snapshot = _snapshot(subject)
    for _ in range(20):
        subject.helper.__defaults__ = tuple([2])
        assert snapshot.changed() == [f"{MODULE}.helper"]


def test_private_module_state_may_change(subject):
    """A cache that fills as kernels bind is the module's own state, not configuration."""
    snapshot = _snapshot(subject)
    subject._cache[("kernel", 0)] = object()
    assert snapshot.changed() == []


def test_a_standard_modules_tables_are_not_watched(subject):
    """`warnings.filters` and its like change as libraries run: only the project's modules
    and the reference roles' copies hold watched tables."""
    other = types.ModuleType("library_subject")
    other.filters = ["default"]
    snapshot = IdentitySnapshot((), [subject, other])
    other.filters.insert(0, "ignore")
    assert snapshot.changed() == []
