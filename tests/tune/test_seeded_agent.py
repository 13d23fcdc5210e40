"""`seed:<profile>/<operator>+<agent>`: a tune run starts from the kernel a profile ships (from
any environment), judged by every gate here, then goes on with the inner agent; a seed whose
files do not match their digests, or that ships no kernel for the operator, is refused.
`template:<operator>+<agent>` starts from the product's kernel template the same way."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from tune_fixtures import ENTRY, FakeEvaluator, journal, only_run, tune_arguments, write_script

from controller.agents import make_agent
from controller.agents.kernel_templates import template_files
from controller.agents.seeded_agent import SeededAgent
from controller.cli.tune_command import run_tune
from controller.errors import ControllerError
from controller.optimize.starting_points import seeded_spec, shipped_submission
from gates.tasks.generation import render_package
from operators import REGISTRY
from operators.profiles import TUNED_ROOT

H200 = TUNED_ROOT / "h200"


def write_seed(root: Path, directive: str, operator: str = "rms_norm") -> Path:
    """A profile `seed` shipping `operator`'s baseline with a fake-evaluator directive."""
    files = render_package(REGISTRY.declaration(operator))
    document = json.loads(files["solution/solution.json"])
    entry = document["spec"]["entry_point"].split("::")[0]
    for source in document["sources"]:
        if source["path"] == entry:
            source["content"] = f"# fake-evaluator: {directive}\n{source['content']}"
    folder = root / "seed"
    written = {f"{operator}/solution/solution.json": json.dumps(document)}
    written.update({f"{operator}/solution/{s['path']}": s["content"] for s in document["sources"]})
    written[f"{operator}/kernel.py"] = "kernel = None\napplies = None\n"
    for relative, text in written.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    profile = {
        "name": "seed",
        "environment": json.loads((H200 / "profile.json").read_text())["environment"],
        "operators": {operator: {"source": f"{operator}/kernel.py"}},
        "files": {r: hashlib.sha256((folder / r).read_bytes()).hexdigest() for r in written},
    }
    (folder / "profile.json").write_text(json.dumps(profile))
    return folder


def test_the_spec_names_the_seed_and_the_agent_after_it():
    agent = make_agent(f"seed:{H200}/rotate_qk+autotune")
    assert isinstance(agent, SeededAgent) and agent.inner.spec == "autotune"
    agent.check_available()
    entry, files = agent.seed_files()
    assert entry.startswith("operators/catalog/rotate_qk.py::")
    assert "operators/catalog/rotate_qk.py" in files and "solution.json" not in files
    installed = H200 / "rotate_qk" / "solution" / "operators" / "catalog" / "rotate_qk.py"
    assert files["operators/catalog/rotate_qk.py"] == installed.read_text(), "not as installed"
    assert make_agent(f"seed:{H200}/rotate_qk").inner.spec == "autotune"
    assert seeded_spec(H200, "rotate_qk", "autotune:2").endswith("h200/rotate_qk+autotune:2")
    assert seeded_spec(H200, "rms_norm", "autotune") == "autotune", "h200 ships no rms_norm"
    assert seeded_spec(None, "rotate_qk", "autotune") == "autotune"


def test_templates_start_what_the_seed_lacks_and_only_for_the_model_free_tuner():
    assert seeded_spec(H200, "gated_gelu_projection", "autotune", templates=True) == (
        "template:gated_gelu_projection+autotune"
    )
    assert seeded_spec(None, "qkv_projection", "autotune:2", templates=True) == (
        "template:qkv_projection+autotune:2"
    )
    assert seeded_spec(H200, "qkv_projection", "autotune", True).endswith(
        "h200/qkv_projection+template+autotune"
    ), "the product's template challenges the seed"
    assert seeded_spec(H200, "rotate_qk", "claude", True).endswith("h200/rotate_qk+claude")
    assert seeded_spec(None, "rms_norm", "autotune", True) == "autotune", "no template"
    assert seeded_spec(None, "qkv_projection", "claude", True) == "claude", "writes its own"
    assert seeded_spec(None, "qkv_projection", "autotune") == "autotune", "templates off"


def test_a_challenged_seed_names_its_challenger_and_checks_both(tmp_path):
    agent = make_agent(f"seed:{H200}/qkv_projection+template+autotune:2")
    assert agent.challenger and agent.inner.spec == "autotune:2"
    assert agent.spec == f"seed:{H200}/qkv_projection+template+autotune:2"
    agent.check_available()
    names = [name for name, _, _ in agent.starts()]
    assert names == ["h200", "template"], "h200's qkv kernel is older than the template"
    assert make_agent(f"seed:{H200}/rotate_qk+template").inner.spec == "autotune"
    seed = write_seed(tmp_path, "factor=0.5")
    with pytest.raises(ControllerError, match="no kernel template for 'rms_norm'"):
        make_agent(f"seed:{seed}/rms_norm+template").check_available()


def test_a_challenged_seed_writes_the_seed_then_the_template_then_the_agent(tune_target, tmp_path):
    """Attempt 1 submits the seed, attempt 2 the product's template against it, attempt 3 is
    the inner agent's, whichever start the gates kept."""
    seed = write_seed(tmp_path, "factor=0.5", operator="qkv_projection")
    entry = "solution/operators/catalog/qkv_projection.py"
    marked = {"tool": "edit", "path": entry, "old": "factor=0.5", "new": "factor=0.4"}
    script = write_script(tmp_path / "session.json", [], [], [marked])
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="qkv_projection",
        agent=f"seed:{seed}/qkv_projection+template+scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=3,
    )
    run_tune(arguments, evaluator=FakeEvaluator())
    attempts = only_run(tmp_path / "runs") / "attempts"
    assert "fake-evaluator: factor=0.5" in (attempts / "0001" / "diff.patch").read_text()
    second = (attempts / "0002" / "diff.patch").read_text()
    assert "+TUNING_SPACE = {" in second and "-# fake-evaluator: factor=0.5" in second
    third = (attempts / "0003" / "diff.patch").read_text()
    assert "+# fake-evaluator: factor=0.4" in third, "the agent goes on from the kept seed"


def test_the_template_spec_writes_the_kernel_its_session_submits():
    agent = make_agent("template:qkv_projection")
    assert isinstance(agent, SeededAgent) and agent.inner.spec == "autotune"
    agent.check_available()
    entry, files = agent.seed_files()
    assert entry is None and list(files) == ["operators/catalog/qkv_projection.py"]
    assert "TUNING_SPACE" in files["operators/catalog/qkv_projection.py"]
    assert "from ...operators" in files["operators/catalog/qkv_projection.py"], "relative"
    programs = "operators/catalog/split_kv_attention_split_dim_programs.py"
    assert programs in template_files("split_kv_attention"), "a sibling module travels"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("seed:nowhere", "use seed:"),
        (f"seed:{H200}/rms_norm", "ships no kernel for 'rms_norm'"),
        (f"seed:{H200}/rotate_qk+seed:x/y", "cannot seed a seed"),
        ("template:rms_norm", "no kernel template for 'rms_norm'; templates exist for"),
        ("template:", "use template:"),
        ("template:qkv_projection+template:rotate_qk", "cannot seed a seed"),
    ],
)
def test_a_bad_seed_is_a_one_line_error(spec, message):
    with pytest.raises(ControllerError, match=message):
        make_agent(spec).check_available()


def test_a_seed_whose_files_moved_from_their_digests_is_refused(tmp_path):
    copy = tmp_path / "h200"
    shutil.copytree(H200, copy)
    kernel = copy / "rotate_qk" / "solution" / "operators" / "catalog" / "rotate_qk.py"
    kernel.write_text(kernel.read_text() + "\n# changed after install\n")
    with pytest.raises(ControllerError, match="does not match its digest"):
        make_agent(f"seed:{copy}/rotate_qk").check_available()


def test_a_seeded_run_judges_the_seed_first_then_the_inner_agent_goes_on(tune_target, tmp_path):
    seed = write_seed(tmp_path, "factor=0.5")
    faster = {"tool": "edit", "path": ENTRY, "old": "factor=0.5", "new": "factor=0.4"}
    script = write_script(tmp_path / "session.json", [], [faster])
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        agent=f"seed:{seed}/rms_norm+scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=2,
    )
    assert run_tune(arguments, evaluator=FakeEvaluator()) == 0
    run_dir = only_run(tmp_path / "runs")
    promoted = [event["attempt"] for event in journal(run_dir) if event.get("to") == "promoted"]
    assert promoted == [1, 2]
    diff = (run_dir / "attempts" / "0001" / "diff.patch").read_text()
    assert "fake-evaluator: factor=0.5" in diff
    # the report names what shipped: the inner agent's change, not the seed it started from
    assert shipped_submission(str(run_dir / "export")) == "the agent's change (attempt 2)"


def test_a_template_not_kept_is_written_again_for_the_search_after_it(tune_target, tmp_path):
    """Attempt 1 submits the template (not promoted here); production's qkv_projection
    declares no space, so attempt 2's inner agent finds the template written again to search."""
    entry = "solution/operators/catalog/qkv_projection.py"
    marked = {
        "tool": "edit",
        "path": entry,
        "old": "TUNING_SPACE = {",
        "new": "TUNING_SPACE = {  # 2",
    }
    script = write_script(tmp_path / "session.json", [], [marked])
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="qkv_projection",
        agent=f"template:qkv_projection+scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=2,
    )
    run_tune(arguments, evaluator=FakeEvaluator())
    attempts = only_run(tmp_path / "runs") / "attempts"
    first = (attempts / "0001" / "diff.patch").read_text()
    assert "+TUNING_SPACE = {" in first, "the template (production declares no space)"
    assert "+TUNING_SPACE = {  # 2" in (attempts / "0002" / "diff.patch").read_text()


def test_a_template_of_another_operator_is_refused_before_it_writes(tune_target, tmp_path):
    arguments = tune_arguments(
        tmp_path / "runs",
        tune_target,
        operator="rms_norm",
        agent="template:qkv_projection",
        unfenced=True,
        device="cuda",
        max_attempts=1,
    )
    run_tune(arguments, evaluator=FakeEvaluator())
    attempt = only_run(tmp_path / "runs") / "attempts" / "0001"
    assert (
        "not the task's entry file operators/catalog/rms_norm.py"
        in (attempt / "agent.json").read_text()
    )
    assert (
        not (attempt / "diff.patch").is_file() or "qkv" not in (attempt / "diff.patch").read_text()
    )
