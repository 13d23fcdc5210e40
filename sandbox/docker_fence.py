"""DockerFence: a throwaway container from a locally made image, host system paths read-only."""

import contextlib
import io
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from sandbox.container_init import HostRelay
from sandbox.environment import fenced_environment
from sandbox.errors import FenceError
from sandbox.policy import FencePolicy
from sandbox.process import OUTPUT_LIMIT_BYTES, TIMEOUT_EXIT_CODE
from sandbox.protocol import FenceProbe, FenceResult, check_command
from sandbox.system_paths import SYSTEM_FOLDERS, system_read_paths

LABEL = "kernel-controller"
IMAGE_REPOSITORY = "kernel-controller/host-root"
DOCKER_MANAGED_ETC = {"/etc/hosts", "/etc/resolv.conf", "/etc/hostname"}
CONTAINER_TMP = Path("/tmp")
INIT_SOURCE = str(Path(__file__).with_name("container_init.py"))
INIT_IN_CONTAINER = "/.kc-container-init.py"


def _top_level_links() -> dict[str, str]:
    """Host top-level symlinks (/lib -> usr/lib) that the image recreates instead of mounting."""
    return {
        folder.lstrip("/"): os.readlink(folder)
        for folder in SYSTEM_FOLDERS
        if os.path.islink(folder)
    }


def _image_tar(links: dict[str, str]) -> bytes:
    """An image root holding only the top-level links; everything else is mounted read-only."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, target in sorted(links.items()):
            entry = tarfile.TarInfo(name)
            entry.type, entry.linkname = tarfile.SYMTYPE, target
            archive.addfile(entry)
        for name in ("tmp", "proc", "dev", "etc"):
            entry = tarfile.TarInfo(name)
            entry.type, entry.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(entry)
    return buffer.getvalue()


class DockerFence:
    """Network none, read-only root, all capabilities dropped, pids/memory/CPU limits."""

    name = "docker"
    _images: dict[str, str] = {}

    def __init__(self, client=None):
        self._docker_client = client

    def _client(self):
        if self._docker_client is None:
            import docker

            self._docker_client = docker.from_env(timeout=60)
        return self._docker_client

    def probe(self) -> FenceProbe:
        details = {
            "network": "none (loopback only); allowed TCP ports reach host 127.0.0.1:PORT "
            "through a unix-socket relay, nothing else",
            "filesystem": "read-only root; system and Python paths read-only; workspace rw",
            "capabilities": "all dropped, no-new-privileges",
            "limits": "pids, memory (cgroup), CPU seconds and file size (ulimit)",
            "timeout": "container killed and removed: every descendant dies",
        }
        reasons = []
        try:
            client = self._client()
            info = client.info()
            details["server"] = str(info.get("ServerVersion", "?"))
            details["gpu_runtime"] = "nvidia" if "nvidia" in info.get("Runtimes", {}) else "none"
        except Exception as error:
            reasons.append(f"no Docker daemon answers ({type(error).__name__})")
        return FenceProbe(fence=self.name, available=not reasons, details=details, reasons=reasons)

    def _image(self) -> str:
        links = _top_level_links()
        tag = "v1-" + "-".join(
            f"{name}.{target.replace('/', '_')}" for name, target in links.items()
        )
        reference = f"{IMAGE_REPOSITORY}:{tag[:120]}"
        if reference in self._images:
            return reference
        import docker

        client = self._client()
        try:
            client.images.get(reference)
        except docker.errors.ImageNotFound:
            repository, _, image_tag = reference.partition(":")
            client.api.import_image_from_data(
                _image_tar(links), repository=repository, tag=image_tag
            )
        self._images[reference] = reference
        return reference

    def run(
        self,
        argv: list[str],
        policy: FencePolicy,
        stdin: str | None = None,
        cwd: Path | None = None,
    ) -> FenceResult:
        folder = check_command(argv, cwd, policy)
        import docker

        started = time.monotonic()
        client = self._client()
        relay_folder = tempfile.mkdtemp(prefix="kc-fence-relay-")
        relay = HostRelay(relay_folder, policy.allow_tcp)
        ports = [str(port) for port in policy.allow_tcp]
        deadline_s = str(int(policy.timeout_s) + 30)  # a backstop; the controller kills first
        init = [sys.executable, "-I", "-S", INIT_IN_CONTAINER, deadline_s, relay_folder, *ports]
        argv = [*init, "--", *argv]
        mounts = _init_mounts(relay_folder)
        try:
            options = _create_options(argv, policy, folder, stdin)
            options["mounts"] += mounts
            container = client.containers.create(self._image(), **options)
        except docker.errors.DockerException as error:
            _close_relay(relay, relay_folder)
            raise FenceError(f"the docker fence could not create the container: {error}") from error
        try:
            return _run_container(container, stdin, policy.timeout_s, started)
        finally:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)
            _close_relay(relay, relay_folder)


def _init_mounts(relay_folder: str) -> list:
    """The container init script and the relay's unix sockets, both read-only."""
    from docker.types import Mount

    return [
        Mount(target=relay_folder, source=relay_folder, type="bind", read_only=True),
        Mount(target=INIT_IN_CONTAINER, source=INIT_SOURCE, type="bind", read_only=True),
    ]


def _close_relay(relay: HostRelay, relay_folder: str) -> None:
    relay.close()
    shutil.rmtree(relay_folder, ignore_errors=True)


def _mounts(policy: FencePolicy) -> list:
    """Bind mounts with one mount per target: Docker refuses a container with a duplicate mount
    point, and a readable path inside a system folder (a pyenv Python) is already mounted."""
    from docker.types import Mount

    links = {f"/{name}" for name in _top_level_links()}
    system = []
    for path in system_read_paths(policy.gpu):
        text = str(path)
        if text in links or text in DOCKER_MANAGED_ETC or text.startswith("/proc"):
            continue
        system.append(path)
    mounts = [
        Mount(target=str(path), source=str(path.resolve()), type="bind", read_only=True)
        for path in system
    ]
    targets = {str(path) for path in system}
    for path in policy.readable:
        if path in policy.readonly_within_workspace:  # mounted below, after the workspace
            continue
        if str(path) in targets or any(path.is_relative_to(folder) for folder in system):
            continue
        targets.add(str(path))
        mounts.append(Mount(target=str(path), source=str(path), type="bind", read_only=True))
    for path in (policy.workspace, *policy.writable):
        if str(path) in targets:
            raise FenceError(
                f"the docker fence cannot mount {path} both read-only and writable; "
                "list it once in the policy"
            )
        targets.add(str(path))
        mounts.append(Mount(target=str(path), source=str(path), type="bind", read_only=False))
    for path in policy.readonly_within_workspace:
        if str(path) not in targets:
            targets.add(str(path))
            mounts.append(Mount(target=str(path), source=str(path), type="bind", read_only=True))
    return mounts


def _create_options(argv: list[str], policy: FencePolicy, folder: Path, stdin: str | None) -> dict:
    from docker.types import DeviceRequest, Ulimit

    limits = policy.limits
    ulimits = [Ulimit(name="core", soft=1, hard=1)]
    if limits.cpu_seconds is not None:
        ulimits.append(Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds))
    if limits.file_size_mb is not None:
        size = limits.file_size_mb << 20
        ulimits.append(Ulimit(name="fsize", soft=size, hard=size))
    options = {
        "command": list(argv),
        "entrypoint": [],
        "user": f"{os.getuid()}:{os.getgid()}",
        "working_dir": str(folder),
        "environment": fenced_environment(policy, CONTAINER_TMP),
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {str(CONTAINER_TMP): "rw,nosuid,nodev,size=1024m,mode=1777"},
        "mounts": _mounts(policy),
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "ipc_mode": "private",
        "labels": {LABEL: "1"},
        "ulimits": ulimits,
        "stdin_open": stdin is not None,
    }
    if limits.processes is not None:
        options["pids_limit"] = limits.processes
    if limits.memory_mb is not None:
        options["mem_limit"] = f"{limits.memory_mb}m"
        options["memswap_limit"] = f"{limits.memory_mb}m"
    if policy.gpu:
        options["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return options


def _run_container(container, stdin: str | None, timeout_s: float, started: float) -> FenceResult:
    import docker
    import requests

    try:
        attached = None
        if stdin is not None:
            attached = container.attach_socket(params={"stdin": 1, "stream": 1})
        container.start()
        if attached is not None:
            raw = attached._sock
            raw.sendall(stdin.encode())
            raw.shutdown(socket.SHUT_WR)
            attached.close()
    except docker.errors.DockerException as error:
        raise FenceError(f"the docker fence could not start the container: {error}") from error
    timed_out = False
    remaining = max(0.1, timeout_s - (time.monotonic() - started))
    try:
        status = container.wait(timeout=remaining)
        returncode = int(status.get("StatusCode", 1))
    except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
        timed_out = True
        returncode = TIMEOUT_EXIT_CODE
        with contextlib.suppress(docker.errors.DockerException):
            container.kill()
    stdout = container.logs(stdout=True, stderr=False)[:OUTPUT_LIMIT_BYTES]
    stderr = container.logs(stdout=False, stderr=True)[:OUTPUT_LIMIT_BYTES]
    return FenceResult(
        returncode=returncode,
        stdout=stdout.decode("utf-8", errors="replace"),
        stderr=stderr.decode("utf-8", errors="replace"),
        timed_out=timed_out,
        seconds=time.monotonic() - started,
    )
