"""What each operator's tune run in an optimize batch starts from (the seed profile's kernel,
the product's kernel template, or the production kernel's own declared space), and which
submission it shipped."""

from pathlib import Path

from controller.agents.autotune_agent import SEARCH_TURN
from controller.agents.kernel_templates import has_template
from controller.agents.seeded_agent import SEED_TURN
from controller.optimize.settings import OptimizeSettings
from controller.runs.records import read_json
from controller.runs.store import RunStore

WRITING_TOOLS = frozenset({"write", "edit"})
"""Tool calls that change the workspace: the turn before the last of them wrote what shipped."""


def seeded_spec(seed: Path | None, operator: str, agent: str, templates: bool = False) -> str:
    """`seed:<profile>/<operator>+<agent>` where the seed profile ships `operator` (with
    `templates` and the model-free tuner, `+template+<agent>`: the product's kernel template
    challenges the seed in attempt 2, since the seed may be older than the product); else, with
    `templates` and the model-free tuner as the agent, `template:<operator>+<agent>` where the
    product ships a kernel template for it (the tuner can search only a declared space, and
    the projections' production path declares none); else `agent`. The seed folder is
    relative to the working directory where it lies inside it, so a batch carried to another
    machine's checkout resumes."""
    template = templates and agent.split(":")[0] == "autotune" and has_template(operator)
    if seed is None or not (seed / operator / "solution" / "solution.json").is_file():
        return f"template:{operator}+{agent}" if template else agent
    folder = seed.resolve()
    if folder.is_relative_to(Path.cwd().resolve()):
        folder = folder.relative_to(Path.cwd().resolve())
    then = f"template+{agent}" if template else agent
    return f"seed:{folder.as_posix()}/{operator}+{then}"


def starting_point(settings: OptimizeSettings, operator: str) -> str:
    """What an operator's tune run submitted first: the seed profile's kernel, the product's
    kernel template, or the production kernel's own declared space."""
    seed = Path(settings.tuned_root) / settings.seed_profile if settings.seed_profile else None
    spec = seeded_spec(seed, operator, settings.tune.agent, settings.templates)
    if spec.startswith("seed:"):
        challenged = "+template+" in spec
        return f"seed `{settings.seed_profile}`" + (", then the template" if challenged else "")
    return "template" if spec.startswith("template:") else "production"


def shipped_submission(export: str | None) -> str:
    """Which submission a tune run exported, from its winning attempt's agent turns: the
    template, a seed profile's kernel, a point of the autotune search, or the agent's change;
    `-` when nothing was exported or the run folder cannot be read. A template shipped at its
    own tiles is not a tuned one: the report says which it was."""
    if not export:
        return "-"
    store = RunStore(Path(export).parent)
    try:
        attempt = read_json(store.run_dir / "publish.json")["attempt"]
        label = _last_writer(read_json(store.attempt_dir(attempt) / "events.json"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "-"
    return f"{label} (attempt {attempt})"


def _last_writer(events: list[dict]) -> str:
    """The label of the last agent turn that wrote a file (a turn's tool calls follow it): a
    search that wrote nothing after the seed was written again leaves the seed shipped."""
    label, writer = "the agent's change", None
    for event in events:
        if event.get("category") == "agent_turn":
            name = event["name"]
            if name == SEARCH_TURN:
                label = "an autotune point"
            elif name == f"{SEED_TURN}template":
                label = "the template at its tiles"
            elif name.startswith(SEED_TURN):
                label = f"seed `{name.removeprefix(SEED_TURN)}`"
            else:
                label = "the agent's change"
        elif event.get("category") == "tool_call" and event.get("name") in WRITING_TOOLS:
            writer = label
    return writer or label
