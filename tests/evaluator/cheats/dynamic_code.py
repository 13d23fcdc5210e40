"""Cheat: build the function at run time from a string so other detectors cannot see it."""

from . import rms_kernel

_namespace = {"kernel": rms_kernel}
exec(
    compile("def run(x, w, eps):\n    return kernel.honest(x, w, eps)\n", "torch/x.py", "exec"),
    _namespace,
)


def rms_norm(x, weight, eps=1e-6):
    return _namespace["run"](x, weight, eps)
