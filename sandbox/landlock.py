"""LandlockFence: kernel-enforced path, port and scope rules plus namespaces, no daemon needed."""

import functools
import marshal
import os
import shutil
import sys
import tempfile
from pathlib import Path

from sandbox import linux_syscalls as linux
from sandbox.environment import fenced_environment
from sandbox.errors import FenceError
from sandbox.policy import FencePolicy
from sandbox.process import run_captured
from sandbox.protocol import FenceProbe, FenceResult, check_command, result_from
from sandbox.seccomp_filter import assemble, build_program
from sandbox.system_paths import DEVICES_READ_WRITE, gpu_devices, system_read_paths

LAUNCHER = Path(__file__).with_name("landlock_launcher.py")
MINIMUM_ABI = 3  # below 3 Landlock cannot stop truncating read-only files
TCP_RULES_ABI = 4
SCOPES_ABI = 6
SOCKET_LISTENING = 0x10000  # __SO_ACCEPTCON in the flags column of /proc/net/unix


def _kernel_version() -> tuple[int, int]:
    release = os.uname().release.split("-")[0].split(".")
    return int(release[0]), int(release[1])


def pid_max_per_namespace() -> bool:
    """Linux 6.14 made pid_max per PID namespace: the process limit that also binds uid 0."""
    return _kernel_version() >= (6, 14)


def _user_namespaces_allowed() -> bool:
    try:
        return int(Path("/proc/sys/user/max_user_namespaces").read_text()) > 0
    except (OSError, ValueError):
        return False


@functools.cache
def _trial_run() -> str:
    """Run `true` fenced once per process: proves namespaces, mounts and rules work here."""
    with tempfile.TemporaryDirectory(prefix="kc-fence-trial-") as workspace:
        policy = FencePolicy(workspace=Path(workspace), timeout_s=60)
        try:
            result = LandlockFence().run(["true"], policy)
        except FenceError as error:
            return str(error).split("; pass")[0]
    return "passed" if result.returncode == 0 else f"`true` exited {result.returncode}"


def host_seqpacket_listeners() -> list[str]:
    """Paths of sequenced-packet unix listeners on this host (udev's control socket, say).

    With the GPU such sockets may be created inside the fence, and Landlock ABI 7 cannot
    refuse connecting to a socket file, so the launcher hides these paths instead.
    """
    try:
        lines = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(maxsplit=7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unbound, abstract (Landlock scopes those) or relative
        if fields[4] == "0005" and int(fields[3], 16) & SOCKET_LISTENING:
            found.append(fields[7])
    return sorted(set(found))


class LandlockFence:
    """Landlock rules, fresh PID/mount/IPC (and network) namespaces, seccomp, no capabilities."""

    name = "landlock"

    def probe(self) -> FenceProbe:
        abi = linux.landlock_abi() if linux.SUPPORTED else 0
        root = os.geteuid() == 0
        reasons = []
        if not linux.SUPPORTED:
            reasons.append(f"unsupported architecture {linux.MACHINE}")
        if abi < MINIMUM_ABI:
            reasons.append(f"Landlock ABI {abi} is below {MINIMUM_ABI} (kernel or LSM list)")
        if not root and not _user_namespaces_allowed():
            reasons.append("not root and user namespaces are disabled")
        trial = _trial_run() if not reasons else "skipped"
        if trial != "passed" and not reasons:
            reasons.append(f"a trial run failed: {trial}")
        details = {
            "trial_run": trial,
            "landlock_abi": str(abi),
            "kernel": os.uname().release,
            "filesystem": "deny by default; read: system, Python, context; write: workspace, tmp",
            "tcp_rules": "bind/connect per port" if abi >= TCP_RULES_ABI else "unavailable",
            "network_none": "new network namespace (no TCP, no UDP, only its own loopback)",
            "network_ports": "host network; TCP only to allowed ports (any address); "
            "UDP and other sockets refused by seccomp (so no DNS over UDP)",
            "scopes": "abstract unix sockets and signals" if abi >= SCOPES_ABI else "none",
            "unix_sockets": "socket(AF_UNIX) refused by seccomp (socketpair allowed); "
            "with the GPU, SOCK_SEQPACKET ones are allowed (CUDA listens on one at start-up), "
            "stream and datagram ones stay refused, and the host's sequenced-packet listeners "
            "present at start are hidden by mounts (Landlock cannot refuse connecting by path)",
            "proc": "a fresh /proc, read-only; with the GPU, files of the fence's own processes "
            "are writable (CUDA needs one) after every global entry is bound read-only and "
            "kernel-memory, key and timer files are masked",
            "namespaces": "pid, mount, ipc (+net)" + ("" if root else " in a user namespace"),
            "capabilities": "all dropped, bounding set emptied, no_new_privs",
            "processes": "per-namespace pid_max (min 300)"
            if pid_max_per_namespace()
            else "RLIMIT_NPROC only (uid 0 is exempt)",
            "memory": "RLIMIT_DATA (private writable memory; shared mappings not counted); "
            "private /dev/shm capped",
            "timeout": "kill the namespace init: every descendant dies",
        }
        return FenceProbe(fence=self.name, available=not reasons, details=details, reasons=reasons)

    def run(
        self,
        argv: list[str],
        policy: FencePolicy,
        stdin: str | None = None,
        cwd: Path | None = None,
    ) -> FenceResult:
        folder = check_command(argv, cwd, policy)
        abi = linux.landlock_abi() if linux.SUPPORTED else 0
        if abi < MINIMUM_ABI:
            raise FenceError(f"Landlock ABI {abi} cannot be enforced; pass --fence docker")
        if policy.allow_tcp and abi < TCP_RULES_ABI:
            raise FenceError(f"Landlock ABI {abi} has no TCP rules; pass --fence docker")
        processes = policy.limits.processes
        if processes is not None and os.geteuid() == 0 and not pid_max_per_namespace():
            raise FenceError(
                "cannot limit processes for uid 0 on this kernel (needs Linux 6.14); "
                "pass --fence docker"
            )
        private_tmp = Path(tempfile.mkdtemp(prefix="kc-fence-tmp-"))
        read_fd, write_fd = os.pipe()
        ruleset_fd = -1
        try:
            ruleset_fd = _host_ruleset(policy, private_tmp, abi)
            config = _launcher_config(policy, folder, abi, write_fd, ruleset_fd)
            launcher = [sys.executable, "-I", "-S", str(LAUNCHER), marshal.dumps(config).hex()]
            command = [*launcher, "--", *argv]  # as separate arguments: each may be 128 KiB
            captured = run_captured(
                command,
                env=fenced_environment(policy, private_tmp),
                stdin=stdin,
                cwd=folder,
                timeout_s=policy.timeout_s,
                pass_fds=(write_fd, ruleset_fd),
            )
            os.close(write_fd)
            write_fd = -1
            os.set_blocking(read_fd, False)
            try:
                failure = os.read(read_fd, 4096).decode(errors="replace").strip()
            except BlockingIOError:
                failure = ""
            if failure:
                raise FenceError(
                    f"the landlock fence could not be set up ({failure}); pass --fence docker"
                )
            return result_from(captured)
        finally:
            for descriptor in (read_fd, write_fd, ruleset_fd):
                if descriptor >= 0:
                    os.close(descriptor)
            shutil.rmtree(private_tmp, ignore_errors=True)


def _host_ruleset(policy: FencePolicy, private_tmp: Path, abi: int) -> int:
    """A Landlock ruleset for the host paths, built here where ctypes is already warm."""
    all_fs = linux.handled_fs_rights(abi)
    net = linux.NET_BIND_TCP | linux.NET_CONNECT_TCP if policy.allow_tcp else 0
    scopes = linux.SCOPE_ABSTRACT_UNIX_SOCKET | linux.SCOPE_SIGNAL if abi >= SCOPES_ABI else 0
    ruleset = linux.create_ruleset(abi, all_fs, net, scopes)
    try:
        for path in system_read_paths(policy.gpu) + list(policy.readable):
            linux.add_path_rule(ruleset, str(path), linux.FS_READ_RIGHTS)
        for path in [policy.workspace, private_tmp, *policy.writable]:
            linux.add_path_rule(ruleset, str(path), _write_rights(abi))
        devices = [Path(path) for path in DEVICES_READ_WRITE if Path(path).exists()]
        device_rights = linux.FS_READ_FILE | linux.FS_WRITE_FILE | (all_fs & linux.FS_IOCTL_DEV)
        for path in devices + (gpu_devices() if policy.gpu else []):
            linux.add_path_rule(ruleset, str(path), device_rights)
        for port in policy.allow_tcp:
            linux.add_port_rule(ruleset, port, net)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _write_rights(abi: int) -> int:
    """Every filesystem right except creating device nodes."""
    return linux.handled_fs_rights(abi) & ~(linux.FS_MAKE_CHAR | linux.FS_MAKE_BLOCK)


def _launcher_config(
    policy: FencePolicy, folder: Path, abi: int, error_fd: int, ruleset_fd: int
) -> dict:
    """Everything the launcher needs, as plain values (marshal-encoded on its command line)."""
    # Rules on paths that only exist inside the new mount namespace are added there.
    # With the GPU, CUDA writes a file of its own process under /proc: the launcher first makes
    # every global part of that /proc read-only or masked, leaving only /proc/<pid> writable.
    proc_rights = linux.FS_READ_RIGHTS
    if policy.gpu:
        proc_rights |= linux.FS_WRITE_FILE | linux.FS_TRUNCATE
    namespace_rules = [("/proc", proc_rights)]
    if Path("/dev/shm").is_dir():
        namespace_rules.append(("/dev/shm", _write_rights(abi)))
    memory_mb = policy.limits.memory_mb
    return {
        "cwd": str(folder),
        "readonly_mounts": [str(path) for path in policy.readonly_within_workspace],
        "network_none": not policy.allow_tcp,
        "limits": policy.limits.model_dump(),
        "gpu": policy.gpu,
        "pid_max_namespaced": pid_max_per_namespace(),
        "shm_mb": min(memory_mb, 1024) if memory_mb else 1024,
        "error_fd": error_fd,
        "parent_pid": os.getpid(),
        "ruleset_fd": ruleset_fd,
        "namespace_rules": namespace_rules,
        # Host sockets a sequenced-packet socket could reach, hidden when the GPU allows one.
        "masked_paths": host_seqpacket_listeners() if policy.gpu else [],
        "seccomp_program": assemble(build_program(bool(policy.allow_tcp), gpu=policy.gpu)),
    }
