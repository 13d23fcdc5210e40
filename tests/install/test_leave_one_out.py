"""benchmarks/leave_one_out.py builds the installed profile without one kernel: the copy still
passes the profile's file check, lacks that operator and keeps every other."""

import json
import sys
from pathlib import Path

import pytest

from operators.profiles import ProfileError, read_profile, verify_files

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from leave_one_out import without  # noqa: E402

INSTALLED = ROOT / "tuned" / "h200"


needs_profile = pytest.mark.skipif(
    not INSTALLED.is_dir(), reason="no installed h200 profile in the tree"
)


@needs_profile
def test_the_profile_without_one_kernel_checks_and_keeps_the_others(tmp_path):
    operators = set(json.loads((INSTALLED / "profile.json").read_text())["operators"])
    root = without(INSTALLED, "rotate_qk", tmp_path / "rotate_qk")
    copy = read_profile(root / "h200")
    verify_files(root / "h200", copy)
    assert set(copy.operators) == operators - {"rotate_qk"}
    assert not (root / "h200" / "rotate_qk").exists()
    assert not any(path.startswith("rotate_qk/") for path in copy.files)


@needs_profile
def test_a_copy_with_a_stray_kernel_file_is_refused(tmp_path):
    root = without(INSTALLED, "rotate_qk", tmp_path / "rotate_qk")
    (root / "h200" / "stray.py").write_text("x = 1\n")
    with pytest.raises(ProfileError, match="stray.py is not in profile.json"):
        verify_files(root / "h200", read_profile(root / "h200"))
