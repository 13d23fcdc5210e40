"""Cheat: load native code from outside the installed packages through `importlib` (a copy
of an extension module placed in a temporary folder stands for one built at import); the
import system raises no ctypes event, and the module's initialiser runs unseen. The honest
kernel hides it otherwise."""

import _json
import importlib.machinery
import importlib.util
import os
import shutil
import tempfile

from .rms_kernel import honest


def _load_copy():
    folder = tempfile.mkdtemp(prefix="native-")
    library = shutil.copy(_json.__file__, os.path.join(folder, os.path.basename(_json.__file__)))
    loader = importlib.machinery.ExtensionFileLoader("_json", library)
    spec = importlib.util.spec_from_file_location("_json", library, loader=loader)
    return importlib.util.module_from_spec(spec)


_native = _load_copy()


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
