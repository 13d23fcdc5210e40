"""The detector table: every cheat class belongs to exactly one family, each family checks at
known stages, and every fixture's expected cheat is a class the table names."""

import inspect

import gates.evaluator.detectors as detectors_package
from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.table import (
    DETECTORS,
    STAGES,
    cheats_at,
    family_of,
    finding_of,
)


def _all_cheat_classes() -> set[type]:
    import importlib
    import pkgutil

    found = set()
    for module_info in pkgutil.iter_modules(detectors_package.__path__):
        module = importlib.import_module(f"gates.evaluator.detectors.{module_info.name}")
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, CheatDetected) and value is not CheatDetected:
                found.add(value)
    return found


def test_every_cheat_class_is_in_exactly_one_family():
    listed = [cheat for family in DETECTORS for cheat in family.cheats]
    assert len(listed) == len(set(listed))
    assert set(listed) == _all_cheat_classes()


def test_families_check_at_known_stages_and_name_their_findings():
    for family in DETECTORS:
        assert family.stages and set(family.stages) <= set(STAGES), family.name
        assert family.rationale
        for cheat in family.cheats:
            assert family_of(cheat) == family.name
            assert cheat.__doc__, f"{cheat.__name__} says what it cheats"
            assert finding_of(cheat("why")).detector == family.name
    assert cheats_at("judge") and all(cheats_at(stage) for stage in STAGES)


# Where each stage's checks run, and the stages they serve.
STAGE_MODULES = {
    "gates/evaluator/guard.py": ("import", "call"),
    "gates/evaluator/timing.py": ("timing",),
    "gates/evaluator/graph_timing.py": ("timing",),
    "gates/evaluator/reference_fingerprints.py": ("timing",),
    "gates/evaluator/judge.py": ("judge",),
    "gates/evaluator/diagnosis.py": ("judge",),
    "gates/evaluator/evaluation.py": ("evaluation",),
}


def test_each_stage_raises_only_the_cheats_the_table_lists_for_it():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    by_name = {cheat.__name__: cheat for family in DETECTORS for cheat in family.cheats}
    for path, stages in STAGE_MODULES.items():
        allowed = {c for stage in stages for c in cheats_at(stage)}
        tree = ast.parse((root / path).read_text())
        named = set()
        for node in ast.walk(tree):
            value = getattr(node, "exc", None) or getattr(node, "value", None)
            if isinstance(node, ast.Raise | ast.Return) and isinstance(value, ast.Call):
                named.add(getattr(value.func, "id", None))
            if isinstance(node, ast.ExceptHandler):  # a cheat the stage catches and reports
                named.add(getattr(node.type, "id", None))
        named = {by_name[name] for name in named if name in by_name}
        assert named, path
        stray = {cheat.__name__ for cheat in named - allowed}
        assert not stray, f"{path} raises {stray}, which the table does not list for {stages}"
