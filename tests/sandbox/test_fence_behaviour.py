"""Ordinary behaviour both fences share: exit codes, long arguments, missing commands, output."""

import sys

import pytest


def test_exit_code_of_a_signalled_command_is_128_plus_signal(fence, layout):
    result = fence.run(["sh", "-c", "kill -9 $$"], layout.policy())
    assert result.returncode == 137
    assert not result.timed_out


def test_long_arguments_reach_the_command_intact(fence, layout):
    argument = "x" * 120_000
    result = fence.run(
        [sys.executable, "-c", "import sys; print(len(sys.argv[1]))", argument], layout.policy()
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "120000"


def test_missing_command_exits_127(fence, layout):
    result = fence.run(["kc-no-such-command"], layout.policy())
    assert result.returncode == 127
    assert "kc-no-such-command" in result.stderr or "not found" in result.stderr


def test_files_written_inside_belong_to_the_caller(fence, layout):
    import os

    fence.run(["sh", "-c", "echo data > owned.txt"], layout.policy())
    info = (layout.workspace / "owned.txt").stat()
    assert (info.st_uid, info.st_gid) == (os.getuid(), os.getgid())


def test_working_folder_can_be_a_subfolder(fence, layout):
    (layout.workspace / "sub").mkdir()
    result = fence.run(["pwd"], layout.policy(), cwd=layout.workspace / "sub")
    assert result.stdout.strip() == str(layout.workspace / "sub")


@pytest.mark.parametrize("command", [[], [""]])
def test_empty_command_is_refused(fence, layout, command):
    from sandbox.errors import FenceError

    with pytest.raises(FenceError):
        fence.run(command, layout.policy())
