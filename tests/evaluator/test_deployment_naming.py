"""The evaluator imports a solution as `controller install` names and places an operator, so
its own `__name__` and `__file__` cannot tell it it is being judged (issue 29); the fixture
that reads them is in test_evaluator_cheats.py (`name_sniff`)."""

import re
import sys

from gates.evaluator import loading
from gates.tasks.generation import render_package
from gates.tasks.solution import Solution
from operators import REGISTRY


def test_a_solution_is_named_and_placed_as_an_installed_profile_operator(tmp_path):
    files = render_package(REGISTRY.declaration("rms_norm"))
    solution = Solution.model_validate_json(files["solution/solution.json"])
    folder = loading.write_sources(
        solution, loading.deployment_folder(tmp_path, "candidate", solution)
    )
    function = loading.import_entry(solution, folder, "candidate")
    module = sys.modules[function.__module__]
    try:
        assert re.fullmatch(
            r"_tuned_p[0-9a-f]{6}_rms_norm\.operators\.catalog\.rms_norm", module.__name__
        )
        relative = module.__file__.removeprefix(str(tmp_path.resolve()) + "/")
        assert re.fullmatch(
            r"tuned/p[0-9a-f]{6}/rms_norm/solution/operators/catalog/rms_norm\.py", relative
        )
        profile = relative.split("/")[1]
        assert module.__name__.startswith(f"_tuned_{profile}_")  # as `installed_kernel` names it
        assert module in loading.solution_modules("candidate")
        baseline = loading.package_name("baseline", solution)
        assert baseline != loading.package_name("candidate", solution)  # roles never collide
    finally:
        loading.forget("candidate")
    assert module.__name__ not in sys.modules and loading.solution_modules("candidate") == []
