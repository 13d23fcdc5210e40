"""Raw Linux syscalls the Landlock fence needs, through `_ctypes` so the launcher starts fast.

Only builtin modules (`posix`, not `os`; `_ctypes`, not `ctypes`): the launcher imports this
before every fenced command, and `os` plus `ctypes` cost several milliseconds there.
"""

import _ctypes
import posix
import sys

MACHINE = posix.uname().machine
# name: (x86_64, aarch64); numbers 424 and up are shared by every architecture.
_NUMBERS = {
    "ioctl": (16, 29),
    "socket": (41, 198),
    "clone": (56, 220),
    "capset": (126, 91),
    "prctl": (157, 167),
    "mount": (165, 40),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "unshare": (272, 97),
    "perf_event_open": (298, 241),
    "setns": (308, 268),
    "seccomp": (317, 277),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "clone3": (435, 435),
    "landlock_create_ruleset": (444, 444),
    "landlock_add_rule": (445, 445),
    "landlock_restrict_self": (446, 446),
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SUPPORTED = MACHINE in AUDIT_ARCH


def number(name: str) -> int:
    """The syscall number on this machine, so one table serves x86_64 and aarch64."""
    return _NUMBERS[name][0 if MACHINE == "x86_64" else 1]


class _Long(_ctypes._SimpleCData):
    _type_ = "l"


class _Char(_ctypes._SimpleCData):
    _type_ = "c"


class _Libc:
    _handle = _ctypes.dlopen(None, 0)


class _SyscallFunction(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Long


_syscall = _SyscallFunction(("syscall", _Libc))


def pinned_buffer(data: bytes):
    """A C buffer holding data whose address stays valid while the returned object lives."""
    array_type = type("Buffer", (_ctypes.Array,), {"_type_": _Char, "_length_": max(len(data), 1)})
    buffer = array_type.from_buffer_copy(data.ljust(max(len(data), 1), b"\0"))
    return buffer, _ctypes.addressof(buffer)


def syscall(name: str, *arguments) -> int:
    """Call a syscall by name; bytes arguments pass as pointers; failure raises OSError."""
    converted = [a if isinstance(a, bytes | _ctypes.Array) else _Long(a) for a in arguments]
    result = _syscall(_Long(number(name)), *converted)
    if result == -1:
        error = _ctypes.get_errno()
        raise OSError(error, f"{name}: {posix.strerror(error)}")
    return result


def u64(value: int) -> bytes:
    return value.to_bytes(8, sys.byteorder)


def u32(value: int) -> bytes:
    return value.to_bytes(4, sys.byteorder)


# Landlock (linux/landlock.h)
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_MAKE_CHAR, FS_MAKE_BLOCK = 1 << 6, 1 << 11
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
FS_READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers, 0 when Landlock is absent or disabled."""
    try:
        return syscall("landlock_create_ruleset", 0, 0, 1)
    except OSError:
        return 0


def handled_fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows, so nothing is left unhandled (allowed by default)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def create_ruleset(abi: int, fs_rights: int, net_rights: int, scopes: int) -> int:
    attribute = u64(fs_rights)
    if abi >= 4:
        attribute += u64(net_rights)
    if abi >= 6:
        attribute += u64(scopes)
    ruleset = syscall("landlock_create_ruleset", attribute, len(attribute), 0)
    posix.set_inheritable(ruleset, False)  # reaches the launcher only through pass_fds
    return ruleset


def add_path_rule(ruleset_fd: int, path: str, rights: int) -> None:
    """Allow rights beneath path (file rights only when path is not a folder)."""
    descriptor = posix.open(path, posix.O_PATH | posix.O_CLOEXEC)
    try:
        if posix.fstat(descriptor).st_mode & 0o170000 != 0o040000:  # not a folder
            rights &= FS_FILE_RIGHTS
        attribute = u64(rights) + descriptor.to_bytes(4, sys.byteorder, signed=True)
        syscall("landlock_add_rule", ruleset_fd, 1, attribute, 0)
    finally:
        posix.close(descriptor)


def add_port_rule(ruleset_fd: int, port: int, rights: int) -> None:
    syscall("landlock_add_rule", ruleset_fd, 2, u64(rights) + u64(port), 0)


def restrict_self(ruleset_fd: int) -> None:
    syscall("landlock_restrict_self", ruleset_fd, 0)


def install_seccomp(packed_program: bytes) -> None:
    """Load an assembled seccomp filter into this process; it survives exec and cannot be lifted."""
    buffer, address = pinned_buffer(packed_program)
    count = len(packed_program) // 8
    program = count.to_bytes(2, sys.byteorder) + bytes(6) + address.to_bytes(8, sys.byteorder)
    syscall("seccomp", 1, 0, program)
    del buffer


# prctl and capabilities
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_SECUREBITS = 1, 24, 28
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
SECUREBITS_LOCKED_NOROOT = 0x2F  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, each locked


def drop_all_capabilities() -> None:
    """Leave no capability now or after exec, even for uid 0 (kernel modules, mounts, reboot)."""
    try:
        syscall("prctl", PR_SET_SECUREBITS, SECUREBITS_LOCKED_NOROOT, 0, 0, 0)
    except OSError:
        if posix.geteuid() == 0:
            raise
    for capability in range(64):
        try:
            syscall("prctl", PR_CAPBSET_DROP, capability, 0, 0, 0)
        except OSError as error:
            if error.errno == 22:  # EINVAL: past the last capability
                break
            raise
    syscall("prctl", PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    syscall("capset", u32(0x20080522) + u32(0), bytes(24))
