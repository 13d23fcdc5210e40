"""The `[tool.controller]` table of a target repository, read once and frozen.

Every gate and flow reads the target's registry, tests, parity drivers and path rules from
here, so a missing or malformed table stops a run before any agent is started.
"""

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gates.changes.limits import ChangeLimits
from gates.errors import GateError

TABLE = "tool.controller"
_LIMITS = ChangeLimits()


class HiddenParity(BaseModel):
    """A driver the controller calls at batch sizes and seeds it draws per run, unseen by agents."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    driver: str = Field(description="`module:function` taking (batch, seed), returning outputs")
    batch_sizes: tuple[int, int] = Field(description="smallest and largest batch the model takes")
    configurations: int = Field(2, ge=1, le=8, description="how many are drawn per run")

    @field_validator("driver")
    @classmethod
    def _driver_names_a_function(cls, driver: str) -> str:
        module, _, function = driver.partition(":")
        if not module or not function:
            raise ValueError(f"{driver!r} is not `module:function`")
        return driver

    @field_validator("batch_sizes")
    @classmethod
    def _ordered_sizes(cls, sizes: tuple[int, int]) -> tuple[int, int]:
        if not 1 <= sizes[0] <= sizes[1]:
            raise ValueError(f"{list(sizes)} is not [smallest, largest] with 1 <= smallest")
        return sizes


class TargetConfig(BaseModel):
    """What the controller needs to know about a target repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    registry_module: str = Field(description="module whose import registers every operator")
    test_command: tuple[str, ...] = Field(min_length=1, description="argv of the target's tests")
    parity_configurations: tuple[str, ...] = Field(
        min_length=1, description="`module:function` drivers returning named output tensors"
    )
    allowed_paths: tuple[str, ...] = Field(
        min_length=1, description="path prefixes a registration may add or change"
    )
    protected_paths: tuple[str, ...] = Field(
        default=(), description="paths a registration must never change or delete"
    )
    expectation_files: tuple[str, ...] = Field(
        default=(), description="files holding expected outputs or bounds; protected implicitly"
    )
    allowed_tool_files: tuple[str, ...] = Field(
        default=(), description="tool configuration files a registration may change, by path"
    )
    hidden_parity: HiddenParity | None = Field(
        default=None, description="driver for configurations drawn per run (other batch, seed)"
    )
    max_file_bytes: int = Field(
        default=_LIMITS.max_file_bytes, gt=0, description="largest changed file"
    )
    max_change_bytes: int = Field(
        default=_LIMITS.max_change_bytes, gt=0, description="all changed files"
    )
    max_changed_files: int = Field(
        default=_LIMITS.max_changed_files, gt=0, description="number of changed paths"
    )

    @field_validator("parity_configurations")
    @classmethod
    def _drivers_name_a_function(cls, drivers: tuple[str, ...]) -> tuple[str, ...]:
        for driver in drivers:
            module, _, function = driver.partition(":")
            if not module or not function:
                raise ValueError(f"{driver!r} is not `module:function`")
        return drivers

    @property
    def limits(self) -> ChangeLimits:
        """The size and count limits every flow's scope gate applies to this target."""
        return ChangeLimits(
            max_file_bytes=self.max_file_bytes,
            max_change_bytes=self.max_change_bytes,
            max_changed_files=self.max_changed_files,
        )

    @property
    def runtime_package(self) -> str:
        """The package holding `ops`, `REGISTRY` and `record_registry_hits`."""
        return self.registry_module.split(".")[0]

    def is_allowed(self, path: str) -> bool:
        return any(_under(path, prefix) for prefix in self.allowed_paths)

    def is_protected(self, path: str) -> bool:
        """Listed as protected, or protected implicitly: the parity drivers' modules, the
        expectation files and `pyproject.toml` (it holds this table)."""
        implicit = ("pyproject.toml", *self.expectation_files, *self.driver_files())
        return path in implicit or any(_under(path, prefix) for prefix in self.protected_paths)

    def driver_files(self) -> tuple[str, ...]:
        """Where the parity drivers' modules may live (`a/b.py` or `a/b/__init__.py`)."""
        drivers = list(self.parity_configurations)
        if self.hidden_parity:
            drivers.append(self.hidden_parity.driver)
        files = []
        for driver in drivers:
            module = driver.partition(":")[0].replace(".", "/")
            files += [f"{module}.py", f"{module}/__init__.py"]
        return tuple(files)


def _under(path: str, prefix: str) -> bool:
    if prefix.endswith("/"):
        return path.startswith(prefix)
    return path == prefix or path.startswith(prefix + "/")


def load_target_config(tree: Path) -> TargetConfig:
    """Read and validate `[tool.controller]` from `tree/pyproject.toml`; one-line GateError."""
    pyproject = Path(tree) / "pyproject.toml"
    if not pyproject.is_file():
        raise GateError(f"{tree} has no pyproject.toml; a target needs a [{TABLE}] table")
    try:
        document = tomllib.loads(pyproject.read_text())
    except tomllib.TOMLDecodeError as error:
        raise GateError(f"{pyproject} is not valid TOML: {error}") from None
    table = document.get("tool", {}).get("controller")
    if not isinstance(table, dict):
        raise GateError(f"{pyproject} has no [{TABLE}] table; add one (see docs/target.md)")
    try:
        return TargetConfig.model_validate(table)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or TABLE
        raise GateError(f"[{TABLE}] {where}: {first['msg']}") from None
