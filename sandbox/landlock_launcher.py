"""Launcher run as `python -I -S landlock_launcher.py HEX -- CMD...`: namespaces, rules, exec.

Process tree: this launcher (outside, mirrors the exit code) -> an init process (pid 1 of a
fresh PID namespace; when it exits the kernel kills every process left inside, setsid and
double forks included) -> the command (its own session, no capabilities, seccomp, Landlock).
The configuration is a hex-encoded marshal dict (json would cost 20 ms of imports).
Any set-up failure is written to the error descriptor and nothing is executed (fail closed).
"""

import marshal
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import linux_syscalls as linux  # noqa: E402

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
SIOCSIFFLAGS, LOOPBACK_UP = 0x8914, 1 | 8 | 64  # IFF_UP | IFF_LOOPBACK | IFF_RUNNING


class SetupError(Exception):
    """A fence step failed; the command must not run."""


def main() -> None:
    config = marshal.loads(bytes.fromhex(sys.argv[1]))
    config["argv"] = sys.argv[3:]  # after the "--" separator
    error_fd = config["error_fd"]
    try:
        # If the controller dies, so does the fence (the namespace init follows the launcher).
        linux.syscall("prctl", linux.PR_SET_PDEATHSIG, 9, 0, 0, 0)
        if os.getppid() != config["parent_pid"]:
            os._exit(125)
        _enter_namespaces(config)
    except Exception as error:
        _fail(error_fd, f"namespaces: {error}")
    init_pid = os.fork()
    if init_pid == 0:
        _run_init(config)
    os.close(error_fd)
    os.close(config["ruleset_fd"])
    _, status = os.waitpid(init_pid, 0)
    os._exit(_exit_code(status))


def _enter_namespaces(config: dict) -> None:
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    if config["network_none"]:
        flags |= CLONE_NEWNET
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    linux.syscall("unshare", flags)
    if uid != 0:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    linux.syscall("mount", 0, b"/", 0, MS_REC | MS_PRIVATE, 0)
    if config["network_none"]:
        import _socket
        import fcntl

        probe = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        request = b"lo".ljust(16, b"\0") + LOOPBACK_UP.to_bytes(2, sys.byteorder)
        fcntl.ioctl(probe.fileno(), SIOCSIFFLAGS, request.ljust(40, b"\0"))
        probe.close()


def _run_init(config: dict) -> None:
    error_fd = config["error_fd"]
    try:
        linux.syscall("prctl", linux.PR_SET_PDEATHSIG, 9, 0, 0, 0)
        _prepare_mounts(config)
    except Exception as error:
        _fail(error_fd, f"mounts: {error}")
    command_pid = os.fork()
    if command_pid == 0:
        _run_command(config)
    os.close(error_fd)
    os.close(config["ruleset_fd"])
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == command_pid:
            os._exit(_exit_code(status))


def _prepare_mounts(config: dict) -> None:
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    linux.syscall("mount", b"proc", b"/proc", b"proc", flags, 0)
    processes = config["limits"].get("processes")
    if processes is not None:
        if not config["pid_max_namespaced"]:
            raise SetupError("no per-namespace pid_max on this kernel")
        _write("/proc/sys/kernel/pid_max", str(max(processes + 2, 301)))
    if os.path.isdir("/dev/shm"):
        size = f"size={config['shm_mb']}m,mode=1777".encode()
        linux.syscall("mount", b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, size)
    for path in config["readonly_mounts"]:
        encoded = path.encode()
        linux.syscall("mount", encoded, encoded, 0, MS_BIND | MS_REC, 0)
        remount = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        linux.syscall("mount", 0, encoded, 0, remount, 0)


def _run_command(config: dict) -> None:
    error_fd = config["error_fd"]
    try:
        os.setsid()
        os.chdir(config["cwd"])
        _apply_limits(config)
        ruleset = config["ruleset_fd"]
        for path, rights in config["namespace_rules"]:
            linux.add_path_rule(ruleset, path, rights)
        linux.syscall("prctl", linux.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        linux.drop_all_capabilities()
        linux.install_seccomp(config["seccomp_program"])
        linux.restrict_self(ruleset)
        os.close(ruleset)
        os.set_inheritable(error_fd, False)
    except Exception as error:
        _fail(error_fd, f"restrictions: {error}")
    argv = config["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        os.write(2, f"fence: cannot execute {argv[0]}: {error.strerror}\n".encode())
        os._exit(127 if isinstance(error, FileNotFoundError) else 126)


def _apply_limits(config: dict) -> None:
    import resource

    limits = config["limits"]
    # RLIMIT_DATA counts private writable memory; RLIMIT_AS would also count the huge virtual
    # reservations of CUDA, V8 and per-thread malloc arenas and break ordinary programs.
    # RLIMIT_CORE 1 (not 0) also stops core dumps piped to a host helper.
    settings = [
        (resource.RLIMIT_CPU, limits.get("cpu_seconds"), 1),
        (resource.RLIMIT_DATA, limits.get("memory_mb"), 1 << 20),
        (resource.RLIMIT_NPROC, limits.get("processes"), 1),
        (resource.RLIMIT_FSIZE, limits.get("file_size_mb"), 1 << 20),
        (resource.RLIMIT_CORE, 1, 1),
    ]
    for kind, value, unit in settings:
        if value is not None:
            resource.setrlimit(kind, (value * unit, value * unit))


def _exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _write(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY)
    try:
        os.write(descriptor, text.encode())
    finally:
        os.close(descriptor)


def _fail(error_fd: int, message: str) -> None:
    os.write(error_fd, message.encode()[:4000])
    os._exit(125)


if __name__ == "__main__":
    main()
