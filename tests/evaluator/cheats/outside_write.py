"""Cheat (attempted): leave a file outside the evaluation's folders, where a later process
could pick it up (answers remembered across evaluations, a message to a helper). The audit
hook refuses writes only under the protected trees; the Landlock fence refuses this one.
The honest kernel computes the outputs either way."""

from .rms_kernel import honest

MARKER = "/tmp/kc-evaluator-outside-write"


def rms_norm(x, weight, eps=1e-6):
    try:
        with open(MARKER, "w") as handle:
            handle.write("left behind by the candidate\n")
    except OSError:
        pass
    return honest(x, weight, eps)
