"""Gate 1, scope: accepts changes within the allowed paths, rejects everything else."""

import os

import pytest
from target_fixture import MODEL_TEST

from gates.registration import scope
from gates.target import load_target_config


@pytest.fixture
def judge(base_tree, commit_of):
    """Scope's verdict on the commit of a candidate tree."""

    def check(candidate):
        config = load_target_config(base_tree)
        return scope.check(base_tree, commit_of(candidate), config, "gelu_tanh")

    return check


def test_accepts_the_good_registration(judge, make_candidate):
    verdict = judge(make_candidate())
    assert verdict.passed, verdict.summary
    assert "added tests/test_gelu_tanh.py" in verdict.details["changes"]


def test_rejects_an_out_of_scope_edit(judge, make_candidate):
    verdict = judge(make_candidate({"README.md": "hello\n"}))
    assert not verdict.passed
    assert verdict.summary.startswith("README.md: outside the allowed paths")


def test_rejects_an_edit_to_the_target_config(judge, make_candidate):
    verdict = judge(make_candidate({"pyproject.toml": "[project]\n"}))
    assert not verdict.passed
    assert "pyproject.toml: protected path modified" in verdict.summary


def test_rejects_a_deleted_protected_file(judge, make_candidate):
    verdict = judge(make_candidate({"tests/conftest.py": None}))
    assert not verdict.passed
    assert "tests/conftest.py: protected path deleted" in verdict.summary


def test_rejects_a_symlink(judge, make_candidate):
    candidate = make_candidate()
    os.symlink("/etc/passwd", candidate / "model" / "secrets.py")
    verdict = judge(candidate)
    assert not verdict.passed
    assert "model/secrets.py: symlinks are not allowed" in verdict.summary


def test_rejects_a_binary_file(judge, make_candidate):
    candidate = make_candidate()
    (candidate / "model" / "weights.bin").write_bytes(b"\x00\x01\x02")
    verdict = judge(candidate)
    assert not verdict.passed
    assert "model/weights.bin: binary files are not allowed" in verdict.summary


def test_rejects_a_weakened_existing_test(judge, make_candidate):
    weakened = MODEL_TEST.replace('    assert outputs["projected"].shape == (2, 8)\n', "")
    verdict = judge(make_candidate({"tests/test_model.py": weakened}))
    assert not verdict.passed
    assert "existing test test_outputs_are_finite was changed" in verdict.summary


def test_rejects_a_removed_existing_test(judge, make_candidate):
    emptied = "from model.parity import run\n"
    verdict = judge(make_candidate({"tests/test_model.py": emptied}))
    assert not verdict.passed
    assert "existing test test_outputs_are_finite was removed" in verdict.summary


def test_accepts_a_new_test_in_an_existing_file(judge, make_candidate):
    extended = (
        MODEL_TEST + "\n\ndef test_batch_one():\n    assert run(1)['hidden'].shape == (1, 8)\n"
    )
    verdict = judge(make_candidate({"tests/test_model.py": extended}))
    assert verdict.passed, verdict.summary


def test_rejects_an_empty_candidate(judge, make_candidate):
    verdict = judge(make_candidate(good=False))
    assert not verdict.passed
    assert verdict.summary == "the candidate changed nothing"


def test_rejects_source_that_patches_another_module(judge, make_candidate):
    patcher = "import operators.ops as registry\n\nregistry._count_hit = lambda *args: None\n"
    verdict = judge(make_candidate({"model/patcher.py": patcher}))
    assert not verdict.passed
    assert "model/patcher.py:3: assigns to an attribute of module registry" in verdict.summary


def test_rejects_setattr_and_sys_modules_in_source(judge, make_candidate):
    sneaky = 'import sys\n\nimport torch\n\nsetattr(torch, "add", None)\nsys.modules.pop("x")\n'
    verdict = judge(make_candidate({"model/sneaky.py": sneaky}))
    assert not verdict.passed
    assert "model/sneaky.py:5: calls setattr() (runtime patching)" in verdict.summary
    assert "touches sys.modules" in str(verdict.details["violations"])


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from operators.catalog import rms_norm\n\nrms_norm.TUNING['block'] = 1\n",
            "model/sneaky.py:3: changes an item of rms_norm, imported data",
        ),
        (
            "from operators.catalog.rms_norm import TUNING\n\nTUNING.update(block=1)\n",
            "model/sneaky.py:3: calls .update() on imported data",
        ),
        (
            "from operators import ops\n\ntable = ops.REGISTRY\nalias = table\n"
            "del alias['rms_norm']\n",
            "model/sneaky.py:5: changes an item of alias, imported data",
        ),
    ],
)
def test_rejects_changing_another_modules_data(judge, make_candidate, source, expected):
    verdict = judge(make_candidate({"model/sneaky.py": source}))
    assert not verdict.passed
    assert expected in verdict.summary


def test_accepts_changing_its_own_data_and_calling_module_functions(judge, make_candidate):
    honest = (
        "import torch\n\nfrom model import run\n\nseen = {}\nseen['a'] = run(1)\n"
        "rows = []\nrows.append(torch.add(torch.ones(2), 1))\nout = torch.zeros(3)\nout[0] = 1\n"
    )
    verdict = judge(make_candidate({"model/honest_helpers.py": honest}))
    assert verdict.passed, verdict.summary


def test_rejects_patching_through_dunder_handles(judge, make_candidate):
    sneaky = 'import torch\n\ntorch.__dict__["add"] = None\n'
    verdict = judge(make_candidate({"model/sneaky.py": sneaky}))
    assert not verdict.passed
    assert "model/sneaky.py:3: uses __dict__ (runtime patching)" in str(verdict.details)


@pytest.mark.parametrize(
    ("path", "source", "read"),
    [
        ("operators/catalog/gelu_tanh.py", "JUDGED = 'pytest' in sys.modules", "reads .modules"),
        (
            "operators/catalog/gelu_kernel.py",
            "JUDGED = 'PYTEST_CURRENT_TEST' in os.environ",
            "reads .environ",
        ),
        (
            "operators/catalog/gelu_kernel.py",
            "HOOKED = threading.getprofile() is not None",
            "reads .getprofile",
        ),
    ],
)
def test_rejects_operator_code_that_asks_where_it_runs(judge, make_candidate, path, source, read):
    """A kernel or reference that computes honestly only while judged (issue 29)."""
    candidate = make_candidate()
    target = candidate / path
    text = target.read_text() if target.is_file() else ""
    text += "".join(f"\nimport {name}  # noqa: E402" for name in ("os", "sys", "threading"))
    text += "\n"
    text += source + "\n"
    target.write_text(text)
    verdict = judge(candidate)
    assert not verdict.passed
    line = len(text.splitlines())
    expected = f"{path}:{line}: {read}: operator code may not ask where or when it runs"
    assert expected in verdict.details["violations"], verdict.details["violations"]
