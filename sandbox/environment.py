"""The environment a fenced command sees: an allowlist, so secrets in the caller's stay outside."""

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from sandbox.policy import FencePolicy

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def fenced_environment(
    policy: FencePolicy, private_tmp: Path, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Allowed names from source, then explicit values; PATH, HOME and TMPDIR get safe defaults."""
    source = os.environ if source is None else source
    python_bin = str(Path(sys.executable).parent)
    environment = {
        "PATH": f"{python_bin}:{DEFAULT_PATH}",
        "HOME": str(private_tmp),
        "LANG": "C.UTF-8",
    }
    environment.update({name: source[name] for name in policy.env if name in source})
    environment.update(policy.env_values)
    environment["TMPDIR"] = str(private_tmp)
    return environment
