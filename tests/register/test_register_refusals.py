"""`controller register run` refuses a bad request with one line and exit 2, creating no run."""

import subprocess

from register_session import SITE_ARGUMENTS

from controller.cli import main


def refuse(capsys, tmp_path, *arguments: str) -> str:
    runs = tmp_path / "runs"
    code = main(
        ["register", "run", *arguments, "--agent", "scripted:x.json", "--runs-dir", str(runs)]
    )
    error = capsys.readouterr().err.strip()
    assert code == 2
    assert len(error.splitlines()) == 1, error
    assert not runs.exists()
    return error


def test_refuses_a_dirty_tree(capsys, tmp_path, target):
    (target / "model" / "vision.py").write_text("# edited\n")
    error = refuse(
        capsys, tmp_path, "--target", str(target), "--operator", "gelu_tanh", *SITE_ARGUMENTS
    )
    assert "has uncommitted changes (M model/vision.py)" in error


def test_refuses_a_target_without_the_table(capsys, tmp_path, target):
    (target / "pyproject.toml").write_text('[project]\nname = "x"\n')
    subprocess.run(
        ["git", "-C", str(target), "commit", "-qam", "drop table"],
        check=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@localhost",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@localhost",
        },
    )
    error = refuse(
        capsys, tmp_path, "--target", str(target), "--operator", "gelu_tanh", *SITE_ARGUMENTS
    )
    assert "has no [tool.controller] table" in error


def test_refuses_an_unknown_call_site(capsys, tmp_path, target):
    error = refuse(
        capsys,
        tmp_path,
        "--target",
        str(target),
        "--operator",
        "gelu_tanh",
        "--call-site",
        "model/vision.py:VisionBlock.backward",
    )
    assert "unknown call site model/vision.py:VisionBlock.backward" in error


def test_refuses_a_malformed_call_site(capsys, tmp_path, target):
    error = refuse(
        capsys,
        tmp_path,
        "--target",
        str(target),
        "--operator",
        "gelu_tanh",
        "--call-site",
        "VisionBlock.forward",
    )
    assert "is not PATH.py:QUALNAME" in error


def test_refuses_an_operator_already_registered(capsys, tmp_path, target):
    error = refuse(
        capsys, tmp_path, "--target", str(target), "--operator", "rms_norm", *SITE_ARGUMENTS
    )
    assert "operator 'rms_norm' is already registered in operators.catalog" in error


def test_all_gates_is_frozen_in_the_gate_settings(target):
    """`--all-gates` reaches the flow through the manifest's gate settings (a resume reuses it)."""
    from controller.cli import build_parser
    from controller.cli.register_command import new_register_run
    from controller.flows.register import RegisterFlow

    arguments = ["register", "run", "--target", str(target), "--operator", "gelu_tanh"]
    for extra, expected in (([], False), (["--all-gates"], True)):
        parsed = build_parser().parse_args([*arguments, *SITE_ARGUMENTS, *extra])
        request = new_register_run(parsed)
        assert request.gate_settings == {"all_gates": expected}
        flow = RegisterFlow(request.work_item, request.gate_settings)
        assert flow.settings.all_gates is expected
