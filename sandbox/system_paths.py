"""The host paths every fenced command may read: system libraries, tools and the Python install."""

import functools
import glob
import sys
from pathlib import Path

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only the /etc entries programs need to start (a shell's start-up files included), resolve
# users and verify TLS; never shadow or keys.
ETC_ENTRIES = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "gai.conf",
    "gitconfig",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ld.so.preload",
    "locale.alias",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "profile",
    "profile.d",
    "protocols",
    "resolv.conf",
    "services",
    "ssl",
    "timezone",
)
DEVICES_READ_WRITE = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
GPU_DEVICE_PATTERNS = ("/dev/nvidia*", "/dev/nvidia-caps/*")


def python_install_paths() -> list[Path]:
    """The interpreter's prefixes (venv and base install), resolved, without the rest of HOME."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates.add(str(Path(sys.executable).resolve().parent.parent))
    return sorted({Path(path).resolve() for path in candidates if Path(path).exists()})


def system_read_paths(gpu: bool = False) -> list[Path]:
    """Existing system folders, /etc entries and Python prefixes, read-only inside the fence."""
    return list(_system_read_paths(gpu))


@functools.cache
def _system_read_paths(gpu: bool) -> tuple[Path, ...]:
    paths = [Path(folder) for folder in SYSTEM_FOLDERS]
    paths += [Path("/etc") / entry for entry in ETC_ENTRIES]
    paths += [Path("/sys/devices/system/cpu")]
    if gpu:
        paths += [Path("/sys"), Path("/proc/driver/nvidia")]
    paths += python_install_paths()
    return tuple(_outermost([path for path in paths if path.exists()]))


def _outermost(paths: list[Path]) -> list[Path]:
    """Drop duplicates and paths inside another listed path (Docker refuses duplicate mounts)."""
    kept: list[str] = []
    for text in sorted({str(path) for path in paths}, key=lambda item: item.count("/")):
        if not any(text == other or text.startswith(other.rstrip("/") + "/") for other in kept):
            kept.append(text)
    return [Path(text) for text in kept]


def gpu_devices() -> list[Path]:
    """The NVIDIA device files present on this machine."""
    found = []
    for pattern in GPU_DEVICE_PATTERNS:
        found += [Path(path) for path in sorted(glob.glob(pattern))]
    return found
