"""No new process and no executable memory without a file, from the candidate on the CPU: a
seccomp filter, installed in the candidate worker just before the solution is imported, makes
the kernel refuse (EPERM) every way of starting a process (fork, vfork, clone without
CLONE_THREAD, clone3, execve, execveat) and every way of making memory executable that no file
backs (an anonymous or writable mmap with PROT_EXEC, mprotect or pkey_mprotect adding it, a
System V segment attached with SHM_EXEC), for the worker and every thread it starts, until it
exits.

The audit hook sees the documented ways (`subprocess`, `os.fork`, `os.posix_spawn`, ...), but
not all: `_posixsubprocess.fork_exec` raises no audit event, and native code raises none. A
process the worker cannot start cannot compute outputs out of sight, build native code at
import, or outlive the evaluation, whatever route the solution finds to the system call. With
executable memory only from files, all native code is in a mapped file, which the
native-mapping check (`detectors/native_mappings.py`) holds to the installed trees. The cost:
oneDNN's JIT (Torch's CPU path for BFloat16 matrix products and convolutions) cannot run in
the worker, so the worker turns Torch's oneDNN path off before installing the filter
(`candidate_run._close_process_creation`) and BFloat16 products run ATen's own compiled code.

On CUDA, Triton runs `ptxas` in a child process to compile an honest kernel, so processes
may start there; the CUDA filter only keeps them in the worker's lineage (no CLONE_PARENT, no
clone3), and the worker is a child subreaper, so even a daemon that forks twice stays its
descendant. The guard then refuses any living child at every check
(`detectors/concurrency.check_children`): a helper process that would hold the outputs'
memory (CUDA IPC) and write them beside a replay is caught, while `ptxas` has ended before
any check. The graph verdict stays the boundary for what a replay computes. Only x86_64 is
described; elsewhere `install` says so and the audit hook is the only line.
"""

import ctypes
import errno
import platform
import struct

PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x00010000
CLONE_PARENT = 0x00008000

# x86_64 system call numbers
CLONE, FORK, VFORK, EXECVE, EXECVEAT, CLONE3 = 56, 57, 58, 59, 322, 435
MMAP, MPROTECT, PKEY_MPROTECT, SHMAT = 9, 10, 329, 30
REFUSED = (FORK, VFORK, EXECVE, EXECVEAT)
PROT_WRITE, PROT_EXEC, MAP_ANONYMOUS, SHM_EXEC = 0x2, 0x4, 0x20, 0o100000

# classic BPF
LOAD_WORD = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_EQUAL = 0x05 | 0x10  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_AT_LEAST = 0x05 | 0x30  # BPF_JMP | BPF_JGE | BPF_K
JUMP_ANY_BIT = 0x05 | 0x40  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
ARCH_OFFSET, NUMBER_OFFSET = 4, 0  # in struct seccomp_data
FIRST_ARGUMENT_OFFSET, THIRD_ARGUMENT_OFFSET, FOURTH_ARGUMENT_OFFSET = 16, 32, 40  # low words


# where a filter's steps end: the return values they jump to by name
RETURNS = {
    "allow": ("ret", SECCOMP_RET_ALLOW),
    "refuse": ("ret", SECCOMP_RET_ERRNO | errno.EPERM),
    "absent": ("ret", SECCOMP_RET_ERRNO | errno.ENOSYS),  # glibc then falls back to clone
}


class BoundaryUnavailable(Exception):
    """The filter cannot be installed here (another architecture, or the kernel refused)."""


def filter_program() -> list[tuple[int, int, int, int]]:
    """The CPU filter as (code, jump if true, jump if false, constant) instructions."""
    labelled = [
        *_native_abi_only(),
        *[("if_equal", number, "refuse", None) for number in REFUSED],
        ("if_equal", CLONE3, "absent", None),
        ("if_equal", MMAP, "mmap", None),
        *[("if_equal", number, "mprotect", None) for number in (MPROTECT, PKEY_MPROTECT)],
        ("if_equal", SHMAT, "shmat", None),
        ("if_equal", CLONE, None, "allow"),
        ("load", FIRST_ARGUMENT_OFFSET),  # clone's flags (the low word)
        ("if_any_bit", CLONE_THREAD, "allow", "refuse"),
        ("label", "mprotect"),  # no page becomes executable after it was mapped
        ("load", THIRD_ARGUMENT_OFFSET),  # prot
        ("if_any_bit", PROT_EXEC, "refuse", "allow"),
        ("label", "shmat"),
        ("load", THIRD_ARGUMENT_OFFSET),  # shmflg
        ("if_any_bit", SHM_EXEC, "refuse", "allow"),
        ("label", "mmap"),  # executable only from a file, and never writable as well
        ("load", THIRD_ARGUMENT_OFFSET),  # prot
        ("if_any_bit", PROT_EXEC, None, "allow"),
        ("if_any_bit", PROT_WRITE, "refuse", None),
        ("load", FOURTH_ARGUMENT_OFFSET),  # flags
        ("if_any_bit", MAP_ANONYMOUS, "refuse", "allow"),
    ]
    return _assemble(labelled)


def lineage_program() -> list[tuple[int, int, int, int]]:
    """The CUDA filter: processes may start (Triton runs `ptxas`), but only as descendants of
    the worker: clone with CLONE_PARENT (a sibling the worker would not see) is refused, and
    clone3, whose flags a filter cannot read, is absent, so glibc uses clone."""
    labelled = [
        *_native_abi_only(),
        ("if_equal", CLONE3, "absent", None),
        ("if_equal", CLONE, None, "allow"),
        ("load", FIRST_ARGUMENT_OFFSET),
        ("if_any_bit", CLONE_PARENT, "refuse", "allow"),
    ]
    return _assemble(labelled)


def _native_abi_only() -> list:
    """Refuse every call not made through the x86_64 ABI (no other ABI's numbers get
    through), then load the call's number."""
    return [
        ("load", ARCH_OFFSET),
        ("if_equal", AUDIT_ARCH_X86_64, None, "refuse"),
        ("load", NUMBER_OFFSET),
        ("if_at_least", X32_SYSCALL_BIT, "refuse", None),
    ]


def _assemble(labelled: list) -> list[tuple[int, int, int, int]]:
    """Classic BPF from labelled steps: a jump names a later label or one of RETURNS."""
    steps = [step for step in labelled if step[0] != "label"]
    where, index = {}, 0
    for step in labelled:
        if step[0] == "label":
            where[step[1]] = index
        else:
            index += 1
    where.update({name: len(steps) + offset for offset, name in enumerate(RETURNS)})
    codes = {"if_equal": JUMP_EQUAL, "if_at_least": JUMP_AT_LEAST, "if_any_bit": JUMP_ANY_BIT}
    program = []
    for index, (kind, constant, *targets) in enumerate(steps):
        if kind == "load":
            program.append((LOAD_WORD, 0, 0, constant))
            continue
        jumps = [0 if target is None else where[target] - index - 1 for target in targets]
        program.append((codes[kind], jumps[0], jumps[1], constant))
    program += [(RETURN, 0, 0, value) for _, value in RETURNS.values()]
    return program


def install(processes_allowed: bool = False) -> None:
    """Make this process a child subreaper and install the filter: the CPU one, or with
    `processes_allowed` the CUDA one (`lineage_program`); raises BoundaryUnavailable where it
    cannot be installed."""
    if platform.machine() != "x86_64":
        raise BoundaryUnavailable(f"no process filter for {platform.machine()}")
    program = lineage_program() if processes_allowed else filter_program()
    packed = b"".join(struct.pack("<HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(packed, len(packed))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise BoundaryUnavailable(f"child subreaper refused: errno {ctypes.get_errno()}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise BoundaryUnavailable(f"no_new_privs refused: errno {ctypes.get_errno()}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise BoundaryUnavailable(f"seccomp filter refused: errno {ctypes.get_errno()}")
