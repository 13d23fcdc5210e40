"""Configurations the agent never sees, drawn once per run from a nonce.

A registration could route a call site only at the parity drivers' batch sizes, or carry a
reference that is wrong only at shapes the drivers never use. So besides the declared parity
configurations the probe runs the target's hidden-parity driver at drawn batch sizes and seeds,
and again at the sizes of the direct calls (within the driver's batch range), and calls each
selected call site directly on random inputs of drawn sizes (odd ones included). The model at
the direct calls' sizes judges a call site whose arguments a registration changed, which no
direct call can compare with BASE. The draw depends only on the run's nonce, so BASE and every
attempt see the same draw and a resumed run draws it again.
"""

import random
import secrets

from pydantic import BaseModel, ConfigDict

from gates.target import TargetConfig

CALL_SIZES = 2
"""Direct calls per call site: one odd leading size, one drawn up to twice the seen size."""


class HiddenConfiguration(BaseModel):
    """One drawn run of the hidden-parity driver; its label is all an agent's feedback shows."""

    model_config = ConfigDict(frozen=True)

    label: str
    driver: str
    batch: int
    seed: int


class HiddenDraw(BaseModel):
    """Everything drawn for one run: driver configurations and the direct calls' sizes."""

    model_config = ConfigDict(frozen=True)

    configurations: tuple[HiddenConfiguration, ...] = ()
    call_sizes: tuple[int, ...] = ()
    """Leading sizes of the direct calls' inputs (the first is odd)."""
    input_seed: int = 0


def new_nonce() -> str:
    return secrets.token_hex(16)


def draw_hidden(config: TargetConfig, nonce: str) -> HiddenDraw:
    """The hidden configurations and direct-call sizes for the run whose nonce is `nonce`."""
    generator = random.Random(nonce)
    configurations: list[HiddenConfiguration] = []
    hidden = config.hidden_parity

    def add(batch: int) -> None:  # the seed is drawn after the batch, in draw order
        configurations.append(
            HiddenConfiguration(
                label=f"hidden configuration {len(configurations) + 1}",
                driver=hidden.driver,
                batch=batch,
                seed=generator.randrange(1, 2**31),
            )
        )

    if hidden is not None:
        smallest, largest = hidden.batch_sizes
        for _ in range(hidden.configurations):
            add(generator.randint(smallest, largest))
    odd = 2 * generator.randint(1, 8) + 1
    sizes = (odd, generator.randint(2, 24))[:CALL_SIZES]
    if hidden is not None:  # the whole model at the direct calls' sizes, within its range
        for size in sizes:
            add(min(max(size, smallest), largest))
    return HiddenDraw(
        configurations=tuple(configurations),
        call_sizes=sizes,
        input_seed=generator.randrange(1, 2**31),
    )


def configuration_names(config: TargetConfig, hidden: HiddenDraw) -> list[str]:
    """Declared parity drivers, then the hidden configurations' labels, in probe order."""
    return [*config.parity_configurations, *(c.label for c in hidden.configurations)]
