"""What each operator's tune run in an optimize batch starts from: the seed profile's kernel,
the product's kernel template, or the production kernel's own declared space."""

from pathlib import Path

from controller.agents.kernel_templates import has_template
from controller.optimize.settings import OptimizeSettings


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
