"""Where the candidate guard looks: the trees nothing may write to (and native code must come
from), the Triton cache honest code writes, and the modules whose functions the evaluator
itself calls while the solution is loaded."""

import os
import sys
import sysconfig
from pathlib import Path

# Where the dynamic linker finds libraries by name: a library planted there by one evaluation
# would be loaded by a later one as if installed.
SYSTEM_LIBRARIES = ("/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib", "/lib64")


def protected_trees() -> list[str]:
    """Where nothing in the candidate process may write: the repository, every import root
    (site-packages, the standard library) and the system library folders, so no later process
    imports or loads a planted file."""
    roots = {str(Path(__file__).resolve().parent.parent.parent), *SYSTEM_LIBRARIES}
    roots.update(sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib"))
    roots.update(entry for entry in sys.path if entry and os.path.isdir(entry))
    return sorted(roots)


def triton_cache_dir() -> str:
    """Where Triton writes compiled kernels (honest solutions compile there)."""
    try:
        from triton import knobs

        return str(knobs.cache.dir)
    except (ImportError, AttributeError):
        return os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))


# Modules whose functions the evaluator calls between the solution's calls and at the end
# of the process (serialisation of outputs and report): a replaced function in them would
# run solution code outside the trace.
STDLIB_WATCHED = frozenset(
    {
        "builtins",
        "os",
        "posixpath",
        "operator",
        "functools",
        "itertools",
        "collections",
        "math",
        "struct",
        "copy",
        "torch.serialization",
        "pickle",
        "json",
        "json.encoder",
        "zipfile",
    }
)


def is_watched(name: str) -> bool:
    return name.startswith(("gates.evaluator", "gates.tasks", "operators")) or (
        name in STDLIB_WATCHED
    )
