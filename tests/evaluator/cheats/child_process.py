"""Cheat: hand the work to a child process, outside the evaluator's view."""

import subprocess
import sys

from .rms_kernel import honest


def rms_norm(x, weight, eps=1e-6):
    subprocess.run([sys.executable, "-c", "pass"], check=False)
    return honest(x, weight, eps)
