"""Who is running: the identity a kernel profile is verified for and a run manifest freezes."""

import platform
import subprocess

import torch
from pydantic import BaseModel, ConfigDict


class KernelEnvironment(BaseModel):
    """What a tuned kernel's verification depends on: the GPU and the compiler stack."""

    model_config = ConfigDict(frozen=True)

    gpu_name: str
    compute_capability: str
    torch: str
    triton: str

    def first_difference(self, other: "KernelEnvironment") -> str | None:
        """The first field that differs, as 'field: ours != theirs', or None."""
        for field in type(self).model_fields:
            ours, theirs = getattr(self, field), getattr(other, field)
            if ours != theirs:
                return f"{field}: {ours!r} != {theirs!r}"
        return None


class EnvironmentIdentity(KernelEnvironment):
    """The kernel environment plus the Python and driver a run's results depend on."""

    python: str
    driver: str


def _triton_version() -> str:
    try:
        import triton
    except ImportError:
        return "absent"
    return triton.__version__


def current_kernel_environment() -> KernelEnvironment:
    return KernelEnvironment(**_kernel_fields())


def current_environment_identity() -> EnvironmentIdentity:
    return EnvironmentIdentity(
        **_kernel_fields(), python=platform.python_version(), driver=_driver_version()
    )


def _kernel_fields() -> dict[str, str]:
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        gpu_name, capability = torch.cuda.get_device_name(), f"{major}.{minor}"
    else:
        gpu_name, capability = "cpu", "none"
    return {
        "gpu_name": gpu_name,
        "compute_capability": capability,
        "torch": torch.__version__,
        "triton": _triton_version(),
    }


def _driver_version() -> str:
    if not torch.cuda.is_available():
        return "none"
    try:
        completed = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return completed.stdout.strip().splitlines()[0] if completed.stdout.strip() else "unknown"
