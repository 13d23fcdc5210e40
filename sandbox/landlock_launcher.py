"""Launcher run as `python -I -S landlock_launcher.py HEX -- CMD...`: namespaces, rules, exec.

Process tree: this launcher (outside, mirrors the exit code) -> an init process (pid 1 of a
fresh PID namespace; when it exits the kernel kills every process left inside, setsid and
double forks included) -> the command (its own session, no capabilities, seccomp, Landlock).
The configuration is a hex-encoded marshal dict (json would cost 20 ms of imports).
Any set-up failure is written to the error descriptor and nothing is executed (fail closed).
"""

import marshal
import posix  # not `os`: its import costs milliseconds on every fenced command
import sys

sys.path.insert(0, __file__.rpartition("/")[0])

import linux_syscalls as linux  # noqa: E402

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
SIOCSIFFLAGS, LOOPBACK_UP = 0x8914, 1 | 8 | 64  # IFF_UP | IFF_LOOPBACK | IFF_RUNNING
S_IFMT, S_IFDIR, S_IFLNK = 0o170000, 0o040000, 0o120000
# Host-wide /proc entries hidden outright when /proc is writable (GPU): kernel memory and
# symbols, the kernel log, keys, timers and scheduler internals, hardware tables.
MASKED_PROC_ENTRIES = frozenset(
    (
        "acpi",
        "kallsyms",
        "kcore",
        "key-users",
        "keys",
        "kmsg",
        "kpagecgroup",
        "kpagecount",
        "kpageflags",
        "latency_stats",
        "sched_debug",
        "scsi",
        "timer_list",
        "timer_stats",
    )
)


class SetupError(Exception):
    """A fence step failed; the command must not run."""


def main() -> None:
    config = marshal.loads(bytes.fromhex(sys.argv[1]))
    config["argv"] = sys.argv[3:]  # after the "--" separator
    error_fd = config["error_fd"]
    try:
        # If the controller dies, so does the fence (the namespace init follows the launcher).
        linux.syscall("prctl", linux.PR_SET_PDEATHSIG, 9, 0, 0, 0)
        if posix.getppid() != config["parent_pid"]:
            posix._exit(125)
        _enter_namespaces(config)
    except Exception as error:
        _fail(error_fd, f"namespaces: {error}")
    init_pid = posix.fork()
    if init_pid == 0:
        _run_init(config)
    posix.close(error_fd)
    posix.close(config["ruleset_fd"])
    _, status = posix.waitpid(init_pid, 0)
    posix._exit(_exit_code(status))


def _enter_namespaces(config: dict) -> None:
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    if config["network_none"]:
        flags |= CLONE_NEWNET
    uid, gid = posix.getuid(), posix.getgid()
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
    command_pid = posix.fork()
    if command_pid == 0:
        _run_command(config)
    posix.close(error_fd)
    posix.close(config["ruleset_fd"])
    while True:
        pid, status = posix.waitpid(-1, 0)
        if pid == command_pid:
            posix._exit(_exit_code(status))


def _prepare_mounts(config: dict) -> None:
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    linux.syscall("mount", b"proc", b"/proc", b"proc", flags, 0)
    processes = config["limits"].get("processes")
    if processes is not None:
        if not config["pid_max_namespaced"]:
            raise SetupError("no per-namespace pid_max on this kernel")
        _write("/proc/sys/kernel/pid_max", str(max(processes + 2, 301)))
    if config["gpu"]:
        _lock_global_proc()
    for path in config["masked_paths"]:
        _mask(path.encode())
    if _is_folder("/dev/shm"):
        size = f"size={config['shm_mb']}m,mode=1777".encode()
        linux.syscall("mount", b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, size)
    for path in config["readonly_mounts"]:
        encoded = path.encode()
        linux.syscall("mount", encoded, encoded, 0, MS_BIND | MS_REC, 0)
        remount = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        linux.syscall("mount", 0, encoded, 0, remount, 0)


def _lock_global_proc() -> None:
    """Leave only the fence's own /proc/<pid> folders writable: the command runs as uid 0, so
    without this a plain write to /proc/sysrq-trigger or /proc/sys would act on the host."""
    remount = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    for name in posix.listdir("/proc"):
        if name.isdigit():
            continue
        path = f"/proc/{name}".encode()
        if (
            posix.lstat(path).st_mode & S_IFMT == S_IFLNK
        ):  # self, thread-self, net, mounts: links into a process folder
            continue
        if name in MASKED_PROC_ENTRIES:
            _mask(path)
        else:
            linux.syscall("mount", path, path, 0, MS_BIND | MS_REC, 0)
            linux.syscall("mount", 0, path, 0, remount, 0)


def _mask(path: bytes) -> None:
    """Hide a host path: an empty read-only tmpfs over a folder, /dev/null over anything else."""
    try:
        kind = posix.stat(path).st_mode & S_IFMT
    except (FileNotFoundError, NotADirectoryError):
        return  # gone, or under a folder masked already
    flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    if kind == S_IFDIR:
        linux.syscall("mount", b"tmpfs", path, b"tmpfs", flags, b"mode=0555")
    else:
        linux.syscall("mount", b"/dev/null", path, 0, MS_BIND, 0)
        linux.syscall("mount", 0, path, 0, MS_REMOUNT | MS_BIND | flags & ~MS_NODEV, 0)


def _run_command(config: dict) -> None:
    error_fd = config["error_fd"]
    try:
        posix.setsid()
        posix.chdir(config["cwd"])
        _apply_limits(config)
        ruleset = config["ruleset_fd"]
        for path, rights in config["namespace_rules"]:
            linux.add_path_rule(ruleset, path, rights)
        linux.syscall("prctl", linux.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        linux.drop_all_capabilities()
        linux.install_seccomp(config["seccomp_program"])
        linux.restrict_self(ruleset)
        posix.close(ruleset)
        posix.set_inheritable(error_fd, False)
    except Exception as error:
        _fail(error_fd, f"restrictions: {error}")
    argv = config["argv"]
    try:
        _execute_from_path(argv)
    except OSError as error:
        posix.write(2, f"fence: cannot execute {argv[0]}: {error.strerror}\n".encode())
        posix._exit(127 if isinstance(error, FileNotFoundError) else 126)


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
    if posix.WIFSIGNALED(status):
        return 128 + posix.WTERMSIG(status)
    return posix.WEXITSTATUS(status)


def _execute_from_path(argv: list[str]) -> None:
    """execvp without `os`: search PATH like a shell, remembering a permission failure."""
    name = argv[0]
    if "/" in name:
        posix.execv(name, argv)
    error: OSError = FileNotFoundError(2, "No such file or directory")
    for folder in posix.environ.get(b"PATH", b"/usr/bin:/bin").decode().split(":"):
        try:
            posix.execv(f"{folder or '.'}/{name}", argv)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as denied:
            error = denied
    raise error


def _is_folder(path: str) -> bool:
    try:
        return posix.stat(path).st_mode & 0o170000 == 0o040000
    except OSError:
        return False


def _write(path: str, text: str) -> None:
    descriptor = posix.open(path, posix.O_WRONLY)
    try:
        posix.write(descriptor, text.encode())
    finally:
        posix.close(descriptor)


def _fail(error_fd: int, message: str) -> None:
    posix.write(error_fd, message.encode()[:4000])
    posix._exit(125)


if __name__ == "__main__":
    main()
