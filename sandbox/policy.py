"""What a fenced command may touch, validated before anything starts so bad input fails early."""

from pathlib import Path

from pydantic import BaseModel, Field, field_validator, model_validator

from sandbox.errors import FenceError


class ResourceLimits(BaseModel, frozen=True):
    """Per-command resource ceilings; None leaves that resource unlimited."""

    cpu_seconds: int | None = Field(600, gt=0, description="CPU time (RLIMIT_CPU).")
    memory_mb: int | None = Field(
        4096,
        gt=0,
        description="Memory: cgroup limit under Docker; RLIMIT_DATA (private writable memory) "
        "under Landlock, where address space would count CUDA's huge virtual reservations.",
    )
    processes: int | None = Field(
        512, gt=0, description="Processes and threads alive at once inside the fence."
    )
    file_size_mb: int | None = Field(1024, gt=0, description="Largest file one write may grow.")


class FencePolicy(BaseModel, frozen=True):
    """Deny by default: only what is listed here is readable, writable or reachable."""

    workspace: Path = Field(description="Read-write folder the command works in; must exist.")
    readable: tuple[Path, ...] = Field(
        (),
        description="Extra read-only context; system and Python paths are added by the fence. "
        "A path inside the workspace (e.g. its `.git`) is kept read-only there.",
    )
    writable: tuple[Path, ...] = Field(
        (), description="Extra writable paths (normally none); a private tmp is always provided."
    )
    readonly_within_workspace: tuple[Path, ...] = Field(
        (),
        description="Paths inside the workspace kept read-only (e.g. `.git`).",
    )
    allow_tcp: tuple[int, ...] = Field(
        (), description="TCP ports that may be connected to or bound; empty means no network."
    )
    env: tuple[str, ...] = Field(
        (), description="Names passed through from the caller's environment; all else dropped."
    )
    env_values: dict[str, str] = Field(
        default_factory=dict, description="Explicit values set inside (e.g. PATH, HOME)."
    )
    limits: ResourceLimits = Field(default_factory=ResourceLimits)
    timeout_s: float = Field(600, gt=0, description="Wall-clock limit; the command is killed.")
    gpu: bool = Field(
        False,
        description="Expose the NVIDIA devices to the command. Under Landlock this also allows "
        "what the CUDA driver needs at start-up: sequenced-packet unix sockets and writes to "
        "the fence's own /proc/<pid> files (every global /proc entry is kept read-only).",
    )

    @field_validator("workspace")
    @classmethod
    def _workspace_exists(cls, path: Path) -> Path:
        if not path.is_dir():
            raise FenceError(f"workspace {path} is not an existing folder; create it first")
        return path.resolve()

    @field_validator("readable", "writable")
    @classmethod
    def _paths_exist(cls, paths: tuple[Path, ...]) -> tuple[Path, ...]:
        for path in paths:
            if not path.exists():
                raise FenceError(f"path {path} does not exist; grant only existing paths")
        return tuple(path.resolve() for path in paths)

    @field_validator("allow_tcp")
    @classmethod
    def _ports_in_range(cls, ports: tuple[int, ...]) -> tuple[int, ...]:
        for port in ports:
            if not 1 <= port <= 65535:
                raise FenceError(f"TCP port {port} is out of range; use 1-65535")
        return tuple(sorted(set(ports)))

    @field_validator("env")
    @classmethod
    def _env_names_valid(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not name or "=" in name or "\0" in name:
                raise FenceError(f"environment variable name {name!r} is not valid")
        return names

    @model_validator(mode="after")
    def _readonly_paths_inside_workspace(self) -> "FencePolicy":
        """Read-only paths inside the workspace, including readable paths that lie there."""
        inside = [path for path in self.readable if self.workspace in path.parents]
        resolved = []
        for path in (*self.readonly_within_workspace, *inside):
            absolute = (path if path.is_absolute() else self.workspace / path).resolve()
            if absolute == self.workspace or self.workspace not in absolute.parents:
                raise FenceError(f"read-only path {path} is not strictly inside the workspace")
            if not absolute.exists():
                raise FenceError(f"read-only path {path} does not exist in the workspace")
            if absolute not in resolved:
                resolved.append(absolute)
        object.__setattr__(self, "readonly_within_workspace", tuple(resolved))
        return self
