"""Tuned gated_residual_norm, written by `controller install`.

From run tune-20261207T235821Z-5d323f, attempt 1.
Its files are pinned by the digests in ../profile.json, and it runs
only on the argument layouts the evaluator verified.
"""

from operators.tuned_solution import installed_kernel

kernel, applies = installed_kernel(__file__)
