"""The new declaration tells the truth: a scripted attempt declaring a lax tolerance without a
preferred kernel, a const axis and a workload smaller than the calls is rejected, and the verdict
shows the declaration beside the shapes its call sites saw (honest declarations pass in every
register run test)."""

import pytest
from target_fixture import GELU_TANH, REQUEST, SITES

from gates.registration import declaration_truth
from gates.registration.call_bindings import SeenCall, bind
from gates.registration.probes import run_probe
from gates.registration.snapshots import take_snapshot
from gates.target import load_target_config
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload

UNTRUTHFUL = {
    'Axis(name="width", kind="const", value=8)': 'Axis(name="width", kind="const", value=1)',
    'contract=Contract(mode="bit_exact", reason="the reference is the production path")': (
        'contract=Contract(mode="no_less_accurate", roundings=4000, reason="room for a kernel")'
    ),
    'workloads=(Workload(name="rows_2", axes={"rows": 2}),)': (
        'workloads=(Workload(name="one", axes={"rows": 1}),)'
    ),
}


@pytest.fixture
def judge(runner, tmp_path):
    """The gate's verdict on a candidate tree, from its real probe and registry snapshot."""

    def run(tree):
        config = load_target_config(tree)
        operator, sites = REQUEST.operator, list(SITES)
        probe = run_probe(tree, tmp_path / "probe", config, operator, runner)
        snapshot = take_snapshot(tree, tmp_path / "snapshot", config, runner)
        return declaration_truth.check(snapshot, probe, config, operator, sites)

    return run


def test_an_untruthful_declaration_is_rejected(make_candidate, judge):
    source = GELU_TANH
    for old, new in UNTRUTHFUL.items():
        assert old in source
        source = source.replace(old, new)
    verdict = judge(make_candidate({"operators/catalog/gelu_tanh.py": source}))
    assert not verdict.passed
    assert verdict.summary.startswith(
        "the gelu_tanh declaration is untruthful: without a preferred kernel every profile "
        "runs the reference, so the contract is bit_exact"
    )
    problems = "\n".join(verdict.details["problems"])
    assert "an expectation of 4000 BF16 roundings is past the bound of 8" in problems
    assert "axis width is declared const 1 but the call sites pass 8" in problems
    assert "no declared workload covers {'rows': 2}" in problems
    declared = verdict.details["declaration"]
    assert declared["contract"] == (
        "no_less_accurate than stock (4000 BF16 roundings expected): room for a kernel"
    )
    assert declared["axes"] == ["rows (var)", "width=1"]
    report = "\n".join(declaration_truth.declaration_markdown(verdict.details))
    assert "| float32[1, 8] -> float32[1, 8] | 2 | rows=1, width=8 | one |" in report
    assert "| float32[2, 8] -> float32[2, 8] | 2 | rows=2, width=8 | none covers it |" in report


def rows_declaration(workloads: tuple[Workload, ...], dtype: str = "bfloat16"):
    return OperatorDeclaration(
        name="scaled",
        summary="Scales rows.",
        axes=(Axis(name="rows", kind="var"), Axis(name="width", kind="const", value=1024)),
        inputs=(TensorSpec(name="x", shape=("rows", "width"), dtype=dtype),),
        outputs=(TensorSpec(name="y", shape=("rows", "width"), dtype=dtype),),
        params={"scale": 2.0},
        reference=lambda x, scale: x * scale,
        contract=Contract(mode="bit_exact", reason="one rounding like eager"),
        workloads=workloads,
    )


def call(shape: tuple[int, ...], count: int = 1, dtype: str = "bfloat16", **keywords) -> SeenCall:
    tensor = ("tensor", dtype, shape)
    return SeenCall(
        arguments=(tensor,),
        keywords=tuple((name, ("value", repr(v))) for name, v in keywords.items()),
        results=(tensor,),
        count=count,
        sites=("model.py:Block.forward",),
    )


def test_leading_axes_fold_into_the_first_and_misfits_are_named():
    declared = rows_declaration((Workload(name="rows_64", axes={"rows": 64}),))
    assert bind(declared, call((2, 8, 64), scale=2.0)).sizes == {"rows": 16, "width": 64}
    assert (
        "x is float32 at the call sites, declared bfloat16"
        in bind(declared, call((8, 64), dtype="float32")).problem
    )
    assert "x has shape [64] at the call sites" in bind(declared, call((64,))).problem
    assert (
        "passes bias=, which is neither an input nor a param"
        in bind(declared, call((8, 64), bias=1.0)).problem
    )


def test_weights_follow_the_call_counts_and_const_axes_have_one_size():
    workloads = (
        Workload(name="short", axes={"rows": 16}, weight=1.0),
        Workload(name="long", axes={"rows": 512}, weight=10.0),
    )
    declared = rows_declaration(workloads)
    calls = [call((8, 64), count=10), call((256, 64), count=1)]
    fitting = [(c, bind(declared, c)) for c in calls]
    served, coverage = declaration_truth.workload_coverage(declared, fitting)
    assert served == {"short": 10, "long": 1} and not coverage
    short, long = declaration_truth.weight_problems(declared, served)
    assert short.startswith("workload short has 9% of the weight but serves 91% of the calls")
    assert long.startswith("workload long has 91% of the weight but serves 9% of the calls")
    assert not declaration_truth.weight_problems(declared, {"short": 1, "long": 10})
    assert not declaration_truth.const_axis_problems(declared, fitting)
    fitting.append((call((8, 32)), bind(declared, call((8, 32)))))
    (problem,) = declaration_truth.const_axis_problems(declared, fitting)
    assert "axis width is declared const but the call sites pass sizes [32, 64]" in problem


def test_a_reference_that_cannot_travel_in_a_task_package_is_rejected(make_candidate, judge):
    """A reference calling a helper of another module passes parity, yet `generate` cannot
    write it as standalone source, so the operator could never be tuned (a registration of
    gated_down_projection did this, all gates passing, before this rule)."""
    helper = "import torch.nn.functional as F\n\n\ndef gelu_formula(x):\n"
    helper += '    return F.gelu(x, approximate="tanh")\n'
    imported = "from operators.catalog.gelu_parts import gelu_formula\n"
    source = GELU_TANH.replace(
        "from operators.contract import Contract\n",
        imported + "from operators.contract import Contract\n",
    ).replace('    return F.gelu(x, approximate="tanh")\n', "    return gelu_formula(x)\n")
    edits = {"operators/catalog/gelu_tanh.py": source, "operators/catalog/gelu_parts.py": helper}
    verdict = judge(make_candidate(edits))
    assert not verdict.passed
    problems = "\n".join(verdict.details["problems"])
    assert "its reference cannot travel in a task package" in problems
    assert "`gelu_formula` (function operators.catalog.gelu_parts.gelu_formula" in problems


def test_a_reference_reaching_a_helper_through_its_module_is_rejected(make_candidate, judge):
    """The nearest variant of the helper above: the module imported, the helper called as its
    attribute. The package would import a repository file it does not carry."""
    helper = "import torch.nn.functional as F\n\n\ndef gelu_formula(x):\n"
    helper += '    return F.gelu(x, approximate="tanh")\n'
    imported = "from operators.catalog import gelu_parts\n"
    source = GELU_TANH.replace(
        "from operators.contract import Contract\n",
        imported + "from operators.contract import Contract\n",
    ).replace(
        '    return F.gelu(x, approximate="tanh")\n', "    return gelu_parts.gelu_formula(x)\n"
    )
    edits = {"operators/catalog/gelu_tanh.py": source, "operators/catalog/gelu_parts.py": helper}
    verdict = judge(make_candidate(edits))
    assert not verdict.passed
    problems = "\n".join(verdict.details["problems"])
    assert "its reference cannot travel in a task package" in problems
    assert "`gelu_parts` (module operators.catalog.gelu_parts of the repository" in problems


def test_a_reference_reaching_a_helper_through_a_class_is_rejected(make_candidate, judge):
    """A third road to the same helper: a class of another module, read by name, whose
    staticmethod the reference calls. A task package writes no class."""
    helper = "import torch.nn.functional as F\n\n\nclass Formula:\n"
    helper += "    @staticmethod\n    def gelu(x):\n"
    helper += '        return F.gelu(x, approximate="tanh")\n'
    imported = "from operators.catalog.gelu_parts import Formula\n"
    source = GELU_TANH.replace(
        "from operators.contract import Contract\n",
        imported + "from operators.contract import Contract\n",
    ).replace('    return F.gelu(x, approximate="tanh")\n', "    return Formula.gelu(x)\n")
    edits = {"operators/catalog/gelu_tanh.py": source, "operators/catalog/gelu_parts.py": helper}
    verdict = judge(make_candidate(edits))
    assert not verdict.passed
    problems = "\n".join(verdict.details["problems"])
    assert "`Formula` (class operators.catalog.gelu_parts.Formula, read by name)" in problems


HELPER = "import torch.nn.functional as F\n\n\ndef gelu_formula(x):\n"
HELPER += '    return F.gelu(x, approximate="tanh")\n'


@pytest.mark.parametrize(
    "body, expected",
    [
        (  # imported inside the reference, relatively
            "    from .gelu_parts import gelu_formula\n\n    return gelu_formula(x)\n",
            "module operators.catalog.gelu_parts of the repository "
            "(operators/catalog/gelu_parts.py), imported inside",
        ),
        (  # imported inside the reference
            "    from operators.catalog.gelu_parts import gelu_formula\n\n"
            "    return gelu_formula(x)\n",
            "module operators.catalog.gelu_parts of the repository "
            "(operators/catalog/gelu_parts.py), imported inside",
        ),
        (  # closed over: the reference is made by another function
            None,
            "closes over 1 value(s) of the function that made it",
        ),
        (  # a helper's default
            "    return formula_of(x)\n\n\ndef formula_of(x, formula=gelu_parts.gelu_formula):\n"
            "    return formula(x)\n",
            "`default 0 of formula_of` (function operators.catalog.gelu_parts.gelu_formula",
        ),
    ],
    ids=["relative_import_inside", "import_inside", "closure", "helper_default"],
)
def test_a_reference_reaching_a_helper_by_the_other_roads_is_rejected(
    make_candidate, judge, body, expected
):
    """The helper of another module reached without a global of the reference's module: an
    import inside the function, a closure (the reference made by a factory), or the default of
    a helper of its own module."""
    source = GELU_TANH
    if body is not None:
        source = source.replace('    return F.gelu(x, approximate="tanh")\n', body).replace(
            "from operators.contract import Contract\n",
            "from operators.catalog import gelu_parts\nfrom operators.contract import Contract\n",
        )
    else:
        start = source.index("def gelu_tanh_reference")
        end = source.index("\n\n\n", start)
        factory = (
            "def _made(formula):\n"
            "    def gelu_tanh_reference(x):\n"
            "        return formula(x)\n\n"
            "    return gelu_tanh_reference\n\n\n"
            "gelu_tanh_reference = _made(gelu_parts.gelu_formula)"
        )
        source = source[:start] + factory + source[end:]
        source = source.replace(
            "from operators.contract import Contract\n",
            "from operators.catalog import gelu_parts\nfrom operators.contract import Contract\n",
        )
    edits = {"operators/catalog/gelu_tanh.py": source, "operators/catalog/gelu_parts.py": HELPER}
    verdict = judge(make_candidate(edits))
    assert not verdict.passed
    assert expected in "\n".join(verdict.details["problems"])


@pytest.mark.parametrize(
    "imported, body, looked_up",
    [
        (
            "import sys\n",
            '    return sys.modules["operators.catalog.gelu_parts"].gelu_formula(x)\n',
            "`modules`",
        ),
        (
            "import importlib\n",
            '    parts = importlib.import_module("operators.catalog.gelu_parts")\n'
            '    return getattr(parts, "gelu_formula")(x)\n',
            "`getattr`, `import_module`",
        ),
        (
            "import pkgutil\n",
            '    return pkgutil.resolve_name("operators.catalog.gelu_parts:gelu_formula")(x)\n',
            "`resolve_name`",
        ),
    ],
    ids=["sys_modules", "import_module_getattr", "resolve_name"],
)
def test_a_reference_looking_a_helper_up_by_a_computed_name_is_rejected(
    make_candidate, judge, imported, body, looked_up
):
    """The helper of another module reached through a name the code computes as it runs: no
    description read from the code sees it, so the code's naming the lookup is refused."""
    source = GELU_TANH.replace('    return F.gelu(x, approximate="tanh")\n', body).replace(
        "from operators.contract import Contract\n",
        imported + "import operators.catalog.gelu_parts  # noqa: F401\n"
        "from operators.contract import Contract\n",
    )
    edits = {"operators/catalog/gelu_tanh.py": source, "operators/catalog/gelu_parts.py": HELPER}
    verdict = judge(make_candidate(edits))
    assert not verdict.passed
    problems = "\n".join(verdict.details["problems"])
    assert f"looks objects up by names computed as it runs ({looked_up})" in problems


def test_a_reference_parameter_the_package_would_not_pass_is_rejected(make_candidate, judge):
    source = GELU_TANH.replace(
        "def gelu_tanh_reference(x: torch.Tensor) -> torch.Tensor:",
        'def gelu_tanh_reference(x: torch.Tensor, approximate: str = "tanh") -> torch.Tensor:',
    ).replace('F.gelu(x, approximate="tanh")', "F.gelu(x, approximate=approximate)")
    verdict = judge(make_candidate({"operators/catalog/gelu_tanh.py": source}))
    assert not verdict.passed
    assert "`approximate`, a parameter with a default that is neither an input nor a param" in (
        "\n".join(verdict.details["problems"])
    )


def test_a_helper_the_repository_sets_on_a_library_module_is_rejected(make_candidate, judge):
    """The helper planted as an attribute of torch: the package imports torch elsewhere, where
    no such attribute is."""
    source = GELU_TANH.replace(
        "from operators.contract import Contract\n",
        "from operators.catalog import gelu_parts\nfrom operators.contract import Contract\n\n"
        "torch.gelu_planted = gelu_parts.gelu_formula\n",
    ).replace('    return F.gelu(x, approximate="tanh")\n', "    return torch.gelu_planted(x)\n")
    edits = {"operators/catalog/gelu_tanh.py": source, "operators/catalog/gelu_parts.py": HELPER}
    verdict = judge(make_candidate(edits))
    assert not verdict.passed
    problems = "\n".join(verdict.details["problems"])
    assert "`torch.gelu_planted` (function operators.catalog.gelu_parts.gelu_formula" in problems
    assert "set by the repository on a module" in problems
