"""A seccomp filter closing the kernel doors Landlock leaves open: sockets, io_uring, namespaces."""

import sys

from sandbox.linux_syscalls import AUDIT_ARCH, MACHINE, number

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK, IPPROTO_TCP = 1, 5, 0xF, 6
EPERM, EACCES, ENOSYS, EAFNOSUPPORT = 1, 13, 38, 97
NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
DENIED_CALLS = (
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "userfaultfd",
    "perf_event_open",
    "io_uring_setup",  # io_uring creates sockets without the socket() syscall
    "io_uring_enter",
    "io_uring_register",
)

_LOAD, _JEQ, _JGE, _JSET, _AND, _RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
_KILL, _ALLOW = 0x80000000, 0x7FFF0000
_NR, _ARCH = 0, 4


def _argument(index: int) -> int:
    """Offset of the low 32 bits of syscall argument index in struct seccomp_data."""
    return 16 + 8 * index + (4 if sys.byteorder == "big" else 0)


def _errno(code: int) -> int:
    return 0x00050000 | code


def build_program(tcp_only: bool, gpu: bool = False) -> list[tuple]:
    """Filter instructions; tcp_only also refuses non-TCP internet sockets (UDP, ICMP, SCTP).

    gpu lets unix sockets of type SOCK_SEQPACKET through: the CUDA driver listens on one at
    start-up. Stream and datagram unix sockets stay refused (a sequenced-packet socket cannot
    connect to the stream listeners host daemons use).
    """
    program = [
        (_LOAD, 0, 0, _ARCH),
        (_JEQ, "native", 0, AUDIT_ARCH[MACHINE]),
        (_RET, 0, 0, _KILL),  # 32-bit entry points would bypass every number below
        "native",
        (_LOAD, 0, 0, _NR),
    ]
    if MACHINE == "x86_64":
        program += [(_JGE, 0, "not_x32", 0x40000000), (_RET, 0, 0, _KILL), "not_x32"]
    for name in DENIED_CALLS:
        program += [(_JEQ, 0, f"after_{name}", number(name)), (_RET, 0, 0, _errno(EPERM))]
        program.append(f"after_{name}")
    program += [
        (_JEQ, 0, "after_clone3", number("clone3")),  # flags hide in a struct; libc falls back
        (_RET, 0, 0, _errno(ENOSYS)),
        "after_clone3",
        (_JEQ, 0, "after_clone", number("clone")),
        (_LOAD, 0, 0, _argument(0)),
        (_JSET, 0, "allow", NAMESPACE_FLAGS),
        (_RET, 0, 0, _errno(EPERM)),
        "after_clone",
        (_JEQ, 0, "allow", number("socket")),
        (_LOAD, 0, 0, _argument(0)),
        # Netlink only inside a private network namespace: on the host's it lists every socket.
        (_JEQ, "deny_socket" if tcp_only else "allow", 0, AF_NETLINK),
        (_JEQ, "internet", 0, AF_INET),
        (_JEQ, "internet", 0, AF_INET6),
    ]
    if gpu:
        program += [
            (_JEQ, 0, "deny_socket", AF_UNIX),
            (_LOAD, 0, 0, _argument(1)),
            (_AND, 0, 0, SOCK_TYPE_MASK),  # the low bits; SOCK_CLOEXEC and SOCK_NONBLOCK above
            (_JEQ, "allow", "deny_socket", SOCK_SEQPACKET),
        ]
    program += [
        "deny_socket",
        (_RET, 0, 0, _errno(EACCES)),  # unix sockets reach host daemons (docker.sock)
        "internet",
    ]
    if tcp_only:
        program += [
            (_LOAD, 0, 0, _argument(1)),
            (_AND, 0, 0, SOCK_TYPE_MASK),
            (_JEQ, 0, "deny_internet", SOCK_STREAM),
            (_LOAD, 0, 0, _argument(2)),
            (_JEQ, "allow", 0, 0),
            (_JEQ, "allow", 0, IPPROTO_TCP),
            "deny_internet",
            (_RET, 0, 0, _errno(EACCES)),
        ]
    program += ["allow", (_RET, 0, 0, _ALLOW)]
    return program


def assemble(program: list) -> bytes:
    """Resolve label jumps to relative offsets and pack struct sock_filter entries."""
    labels, instructions = {}, []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    packed = b""
    for index, (code, true_jump, false_jump, constant) in enumerate(instructions):
        offsets = []
        for jump in (true_jump, false_jump):
            offset = labels[jump] - index - 1 if isinstance(jump, str) else jump
            if not 0 <= offset <= 255:
                raise ValueError(f"seccomp jump out of range at {index}")
            offsets.append(offset)
        packed += (
            code.to_bytes(2, sys.byteorder) + bytes(offsets) + constant.to_bytes(4, sys.byteorder)
        )
    return packed
