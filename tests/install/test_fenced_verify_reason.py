"""A fenced model run that fails is reported by its exception line, not by a CUDA warning a
destructor printed after the traceback."""

from controller.verification.fenced_verify import _last_line


def test_the_exception_line_is_the_reason_even_when_a_warning_follows_it():
    text = (
        "Traceback (most recent call last):\n  File 'x.py', line 1\n"
        "torch.AcceleratorError: CUDA error: unspecified launch failure\n"
        "[W1206 08:27:48] Warning: CUDA warning: unspecified launch failure (function ~CUDAEvent)\n"
    )
    assert _last_line(text) == "torch.AcceleratorError: CUDA error: unspecified launch failure"


def test_without_an_exception_the_last_line_is_the_reason():
    assert _last_line("starting\nkilled by the fence\n") == "killed by the fence"
    assert _last_line("") == ""
