"""Every other operator stays exactly as BASE has it: scripted attempts that loosen another
operator's contract, change its production kernel so it is wrong only at real sizes, or shadow
its name with a loosened copy listed first each leave the parity outputs unchanged and are
rejected here (an honest registration passes these gates in every register run test)."""

import pytest
from target_fixture import CATALOG_GOOD, GELU_TANH, vision

from gates.registration import kernel_workloads, operator_identity
from gates.registration.snapshots import take_snapshot
from gates.target import load_target_config
from operators.contract import Contract
from operators.declaration import Axis, OperatorDeclaration, TensorSpec, Workload
from operators.errors import OperatorError
from operators.registry import OperatorRegistry

LOOSENED_CONTRACT = """

DECLARATION = DECLARATION.model_copy(
    update={"contract": Contract(mode="no_less_accurate", roundings=3000, reason="faster")}
)
"""

CAPPED_KERNEL = '''

def _capped_rms_norm(x, weight, eps=1e-6):
    """The production kernel on the first 64 columns only: exact while rows fit one block."""
    out = rms_norm_triton(x[..., :64].contiguous(), weight[:64], eps)
    return torch.cat([out, torch.zeros_like(x[..., 64:])], dim=-1)


DECLARATION = DECLARATION.model_copy(update={"preferred": _capped_rms_norm})
'''

SLOPPY_STOCK = '''

def _fp8_stock(x, weight, eps=1e-6):
    """A "stock" that rounds through FP8: it would let any kernel that sloppy pass."""
    return rms_norm_reference(x, weight, eps).to(torch.float8_e4m3fn).to(x.dtype)


DECLARATION = DECLARATION.model_copy(update={"stock": _fp8_stock})
'''

SHADOW = '''\
"""A faster rms_norm."""

from operators.catalog import rms_norm
from operators.contract import Contract

DECLARATION = rms_norm.DECLARATION.model_copy(
    update={"contract": Contract(mode="no_less_accurate", roundings=64, reason="faster")}
)
'''

PLAIN_LOOP = """for _declaration in CATALOG:
    REGISTRY.register(_declaration)
"""


@pytest.fixture(scope="module")
def base_snapshot(base_tree, runner, tmp_path_factory):
    config = load_target_config(base_tree)
    return take_snapshot(base_tree, tmp_path_factory.mktemp("base-snapshot"), config, runner)


@pytest.fixture
def snapshot(runner, tmp_path):
    def take(tree):
        return take_snapshot(tree, tmp_path / "snapshot", load_target_config(tree), runner)

    return take


def rms_norm_source(base_tree) -> str:
    return (base_tree / "operators/catalog/rms_norm.py").read_text()


def test_another_operators_loosened_contract_is_rejected(
    base_tree, base_snapshot, make_candidate, snapshot
):
    source = rms_norm_source(base_tree) + LOOSENED_CONTRACT
    tree = make_candidate({"operators/catalog/rms_norm.py": source})
    verdict = operator_identity.check(base_tree, tree, base_snapshot, snapshot(tree))
    assert not verdict.passed
    assert verdict.summary.startswith("rms_norm: its contract changed from no_less_accurate with")
    assert "to no_less_accurate with 3000 BF16 roundings" in verdict.summary
    assert "out of scope for the register flow" in verdict.summary


@pytest.mark.slow
def test_another_operators_kernel_wrong_only_at_real_sizes_is_rejected(
    base_tree, base_snapshot, make_candidate, snapshot, runner, tmp_path
):
    tree = make_candidate(
        {"operators/catalog/rms_norm.py": rms_norm_source(base_tree) + CAPPED_KERNEL}
    )
    candidate = snapshot(tree)
    verdict = operator_identity.check(base_tree, tree, base_snapshot, candidate)
    assert not verdict.passed
    assert (
        "rms_norm: its preferred kernel is now operators.catalog.rms_norm._capped"
        in verdict.summary
    )
    assert any(
        "depends on operators/catalog/rms_norm.py" in d for d in verdict.details["differences"]
    )
    config = load_target_config(tree)
    ran = kernel_workloads.check(
        base_tree, tree, base_snapshot, candidate, config, runner, tmp_path, "nonce"
    )
    assert not ran.passed
    assert ran.summary.startswith("rms_norm's preferred kernel at workload")
    assert "hidden=1024" in ran.summary and "breaks its no_less_accurate contract" in ran.summary


def test_a_name_shadowed_by_a_loosened_copy_listed_first_is_an_import_error(
    base_tree, base_snapshot, make_candidate, snapshot
):
    """With the catalog registering every entry, the copy is refused at import (where the
    catalog skips names already taken, the run test shows the copy's contract rejected)."""
    catalog = CATALOG_GOOD.replace(
        "import gelu_tanh, rms_norm", "import gelu_tanh, rms_norm, rms_norm_fast"
    ).replace("(rms_norm.DECLARATION,", "(rms_norm_fast.DECLARATION, rms_norm.DECLARATION,")
    assert "rms_norm_fast.DECLARATION, rms_norm" in catalog
    catalog = catalog[: catalog.index("for _declaration in CATALOG:")] + PLAIN_LOOP
    tree = make_candidate(
        {"operators/catalog/rms_norm_fast.py": SHADOW, "operators/catalog/__init__.py": catalog}
    )
    verdict = operator_identity.check(base_tree, tree, base_snapshot, snapshot(tree))
    assert not verdict.passed
    assert "importing the registry failed: OperatorError: operator 'rms_norm'" in verdict.summary
    assert "one name takes one declaration" in verdict.summary


def test_another_operators_launch_settings_changed_by_model_code_are_rejected(
    base_tree, base_snapshot, make_candidate, snapshot
):
    """No file of rms_norm changes and no attribute is assigned: the routed model module
    mutates, when imported, a dict the kernel reads; only a comparison through the registry,
    with the parity drivers' modules imported, sees it."""
    mutation = 'from operators.catalog import rms_norm\n\nrms_norm.TUNING["num_warps"] = 1\n'
    tree = make_candidate({"model/vision.py": vision() + "\n" + mutation})
    verdict = operator_identity.check(base_tree, tree, base_snapshot, snapshot(tree))
    assert not verdict.passed
    assert verdict.summary.startswith("rms_norm: its preferred kernel changed (first at ")
    assert "TUNING" in verdict.summary


def test_a_changed_helper_file_is_seen_even_where_the_code_reads_the_same(
    base_tree, base_snapshot, make_candidate
):
    helper = (base_tree / "operators/catalog/blocking.py").read_text()
    tree = make_candidate({"operators/catalog/blocking.py": helper + "# a comment\n"})
    verdict = operator_identity.check(base_tree, tree, base_snapshot, base_snapshot)
    assert not verdict.passed
    assert (
        "depends on operators/catalog/blocking.py, which the candidate changed" in verdict.summary
    )


def declaration(summary: str = "Doubles x.") -> OperatorDeclaration:
    return OperatorDeclaration(
        name="doubled",
        summary=summary,
        axes=(Axis(name="n", kind="var"),),
        inputs=(TensorSpec(name="x", shape=("n",)),),
        outputs=(TensorSpec(name="y", shape=("n",)),),
        reference=lambda x: x * 2,
        contract=Contract(mode="bit_exact", reason="one rounding like eager"),
        workloads=(Workload(name="n4", axes={"n": 4}),),
    )


def test_the_registry_refuses_a_second_declaration_under_one_name():
    registry = OperatorRegistry()
    first = registry.register(declaration())
    assert registry.register(first) is first  # the same object again: a re-imported catalog
    with pytest.raises(OperatorError, match="already registered .* one name takes one declaration"):
        registry.register(declaration(summary="Another doubling."))
    assert registry.declaration("doubled") is first


def test_first_difference_names_the_path():
    old = {"contract": {"mode": "bit_exact"}, "axes": [1, 2]}
    assert operator_identity.first_difference(old, old) is None
    assert operator_identity.first_difference(old, {**old, "axes": [1, 3]}) == "axes[1]"
    new = {**old, "contract": {"mode": "no_less_accurate"}}
    assert operator_identity.first_difference(old, new) == "contract.mode"


SETTLING_GELU = GELU_TANH.replace(
    "from operators.contract import Contract",
    "from operators.catalog import rms_norm\nfrom operators.contract import Contract",
).replace(
    '''def gelu_tanh_reference(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), eager PyTorch."""
''',
    '''_SETTLED = []


def _settle(table: dict) -> None:
    """Launch with fewer warps."""
    table["num_warps"] = 1


def gelu_tanh_reference(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), eager PyTorch."""
    if not _SETTLED:
        _SETTLED.append(True)
        _settle(rms_norm.TUNING)
''',
)


@pytest.mark.slow
def test_another_operators_launch_table_changed_on_the_first_call_is_rejected(
    base_tree, base_snapshot, make_candidate, snapshot, probe
):
    """The new operator's reference, on its first call, lowers rms_norm's warps through a
    helper that takes the table as a parameter: no file of rms_norm changes, the import-time
    snapshots agree, the bits do not change; BASE's snapshot against the description the
    parity probe writes after its run names the operator and the field."""
    assert "_settle(rms_norm.TUNING)" in SETTLING_GELU
    tree = make_candidate({"operators/catalog/gelu_tanh.py": SETTLING_GELU})
    candidate = snapshot(tree)
    assert operator_identity.check(base_tree, tree, base_snapshot, candidate).passed
    after = {"after the parity run": probe(tree).snapshot_after_run()}
    verdict = operator_identity.check(base_tree, tree, base_snapshot, candidate, after)
    assert not verdict.passed
    assert verdict.summary.startswith(
        "rms_norm: after the parity run, its preferred kernel changed (first at "
    ), verdict.summary
    assert "TUNING" in verdict.summary


def test_a_profile_refusal_reads_the_same_from_two_copies_of_a_tree(tmp_path):
    # An installed profile for another GPU refuses to load on this machine; BASE's copy and
    # the candidate's must describe that refusal alike, or every registration is rejected.
    from gates.registration.registry_snapshot import _last_line

    lines = []
    for copy in ("base", "candidate"):
        tree = tmp_path / copy
        try:
            raise RuntimeError(f"profile h200 in {tree}/tuned/h200 was verified on NVIDIA H200")
        except RuntimeError as error:
            lines.append(_last_line(error, tree))
    assert lines[0] == lines[1] and "tuned/h200" in lines[0]


@pytest.mark.slow
def test_a_stock_formulation_that_would_loosen_the_contract_is_rejected(
    base_tree, base_snapshot, make_candidate, snapshot, runner, tmp_path
):
    tree = make_candidate(
        {"operators/catalog/rms_norm.py": rms_norm_source(base_tree) + SLOPPY_STOCK}
    )
    candidate = snapshot(tree)
    config = load_target_config(tree)
    ran = kernel_workloads.check(
        base_tree, tree, base_snapshot, candidate, config, runner, tmp_path, "nonce"
    )
    assert not ran.passed
    assert "may not loosen the operator's own contract" in ran.summary, ran.summary
