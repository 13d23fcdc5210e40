"""The detector table: every cheat class belongs to exactly one family, each family checks at
known stages, and every fixture's expected cheat is a class the table names."""

import inspect

import gates.evaluator.detectors as detectors_package
from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.table import DETECTORS, STAGES, cheats_at, family_of


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
            assert cheat("why").finding().detector == family.name
    assert cheats_at("judge") and all(cheats_at(stage) for stage in STAGES)
