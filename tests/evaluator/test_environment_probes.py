"""A solution may not ask where or when it runs: it imports only what a kernel needs, new reads
of the loaded modules, profiler hooks, environment, argv, process, clocks, randomness or torch's
own counters are refused from its sources, and the query functions record calls made from its
files (the end-to-end fixtures are in test_evaluator_cheats.py)."""

import importlib
import os
import sys
import threading
from pathlib import Path

import pytest
import torch

from gates.evaluator.detectors.environment_probes import (
    WRAPPED,
    EnvironmentQueryTripwires,
    source_probes,
)
from gates.evaluator.detectors.torch_probes import TORCH_WRAPPED

ROOT = Path(__file__).resolve().parents[2]
CHEATS = Path(__file__).resolve().parent / "cheats"

HONEST = "import torch\n\n\ndef scale(x):\n    return torch.mul(x, 2)\n"


def test_every_spelling_of_the_loaded_module_table_is_a_probe():
    spellings = {
        "attribute.py": "import sys\nLOADED = sys.modules\n",
        "imported.py": "from sys import modules\n",
        "computed.py": "import sys\nLOADED = getattr(sys, 'mod' + 'ules')\n",
        "named.py": "import sys\nLOADED = getattr(sys, 'modules')\n",
        "namespace.py": "import sys\nLOADED = vars(sys)['modules']\n",
        "finder.py": "import importlib.util\nSPEC = importlib.util.find_spec('pytest')\n",
        "environment.py": "import os\nJUDGED = 'PYTEST_CURRENT_TEST' in os.environ\n",
        "profiler.py": "import threading\nHOOKED = threading.getprofile()\n",
    }
    found = source_probes(spellings, {})
    assert {line.split(":")[0] for line in found} == set(spellings), found
    assert source_probes({"kernel.py": HONEST}, {}) == []


def test_every_way_to_tell_one_moment_or_call_from_another_is_a_probe():
    spellings = {
        "clock.py": "import time\nUNTIL = time.time() + 86400\n",
        "from_clock.py": "from time import perf_counter\n",
        "date.py": "from datetime import datetime\nTODAY = datetime.now()\n",
        "coin.py": "import random\nCOIN = random.random()\n",
        "numpy_coin.py": "import numpy\nCOIN = numpy.random.rand()\n",
        "bytes.py": "import os\nSEED = os.urandom(4)\n",
        "secret.py": "import secrets\nSEED = secrets.randbits(8)\n",
        "gpu_timer.py": "import triton.language as tl\nTIMER = tl.extra.cuda.globaltimer\n",
        "assembly.py": "import triton.language as tl\nASM = tl.inline_asm_elementwise\n",
        "hits.py": "import functools\nHITS = functools.lru_cache(len).cache_info().hits\n",
        "collector.py": "import gc\nSEEN = gc.get_count()\n",
    }
    found = source_probes(spellings, {})
    assert {line.split(":")[0] for line in found} == set(spellings), found


def test_a_read_the_baseline_makes_at_the_same_path_is_not_new():
    runtime = "import os\n\n\ndef interpreting():\n    return os.environ.get('X') == '1'\n"
    assert source_probes({"runtime.py": runtime}, {"runtime.py": runtime}) == []
    again = runtime + "\n\nJUDGED = 'PYTEST_CURRENT_TEST' in os.environ\n"
    assert source_probes({"runtime.py": again}, {"runtime.py": runtime}) == [
        "runtime.py:8: reads .environ"
    ]


IMPORTS_OF_A_KERNEL = """\
from __future__ import annotations

import abc
import collections.abc
import contextlib
import dataclasses
import enum
import functools
import itertools
import math
import numbers
import operator
import typing
from collections import OrderedDict

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ...operators.kernel_launch import launch
from ..shapes import PI05
from . import rounding
"""


def test_a_kernel_imports_torch_triton_a_little_of_the_standard_library_and_its_own_files():
    assert source_probes({"operators/catalog/kernel.py": IMPORTS_OF_A_KERNEL}, {}) == []


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("import os\nT = os.times()\n", "os"),
        ("import platform\n", "platform"),
        ("from socket import gethostname\n", "socket"),
        ("import ctypes.util\n", "ctypes.util"),
        ("import threading\n", "threading"),
        ("import psutil\n", "psutil"),
        ("import getpass\n", "getpass"),
        ("from pathlib import Path\n", "pathlib"),
        ("import subprocess\n", "subprocess"),
        ("import builtins\n", "builtins"),
        ("import io\n", "io"),
        ("import numpy\n", "numpy"),
        (
            "from torch.utils._python_dispatch import TorchDispatchMode\n",
            "torch.utils._python_dispatch",
        ),
        ("from triton.runtime import driver\n", "triton.runtime"),
        ("from operators.environment import describe\n", "operators.environment"),
    ],
)
def test_any_other_import_is_refused_naming_the_module_and_what_is_allowed(source, module):
    (found,) = [line for line in source_probes({"kernel.py": source}, {}) if "imports" in line]
    assert found.startswith(f"kernel.py:1: imports {module} (a kernel may import only torch, ")
    assert found.endswith("contextlib, and its own files)") and "\n" not in found


def test_a_relative_import_may_not_climb_out_of_the_solution():
    source = "from .... import kernel\n"  # operators/catalog/x.py: four dots leave the solution
    assert source_probes({"operators/catalog/x.py": source}, {}) == [
        "operators/catalog/x.py:1: imports .... (from outside the solution)"
    ]
    assert source_probes({"operators/catalog/x.py": "from ... import kernel\n"}, {}) == []


def test_an_operator_may_import_its_own_runtime_package_by_name():
    source = "from operators.catalog.shapes import PI05\nfrom operators import triton_runtime\n"
    assert source_probes({"operators/catalog/op.py": source}, {}, own_package="operators") == []
    assert len(source_probes({"kernel.py": source}, {})) == 2  # a solution's copy is relative


@pytest.mark.parametrize(
    "source",
    [
        "S = open('/proc/self/stat').read()\n",
        "exec('x = 1')\n",
        "X = eval('1')\n",
        "C = compile('1', 'f', 'exec')\n",
        "breakpoint()\n",
        "X = input()\n",
        "import functools\nX = functools.reduce(getattr, ['cuda', 'utilization'], None)\n",
    ],
)
def test_builtins_that_read_the_host_or_hide_a_name_are_refused(source):
    assert source_probes({"kernel.py": source}, {}), source


def test_a_tensor_parameter_named_input_is_not_the_builtin():
    source = "import torch\n\n\ndef gelu(input):\n    return torch.tanh(input)\n"
    assert source_probes({"kernel.py": source}, {}) == []


@pytest.mark.parametrize(
    "read",
    [
        "torch.cuda.memory_allocated()",
        "torch.cuda.memory_reserved()",
        "torch.cuda.memory_stats()['allocation.all.allocated']",
        "torch.cuda.max_memory_allocated()",
        "torch.cuda.mem_get_info()",
        "torch.cuda.is_current_stream_capturing()",
        "torch.compiler.is_compiling()",
        "torch.compiler.is_dynamo_compiling()",
        "torch.cuda.get_rng_state()",
        "torch.get_rng_state()",
        "torch.initial_seed()",
        "torch.seed()",
        "torch.cuda.default_generators[0].get_offset()",
        "torch.cuda.utilization()",
        "torch.cuda.temperature()",
        "torch.cuda.clock_rate()",
        "torch.cuda.power_draw()",
        "torch.cuda.list_gpu_processes()",
        "id(torch.cuda.current_stream())",
        "torch.get_num_threads()",
        "torch.are_deterministic_algorithms_enabled()",
        "torch.cuda.get_device_properties(0).uuid",
        "torch.from_file('/proc/self/stat', size=64)",
        "torch._C._cuda_getCurrentRawStream(0)",
        "getattr(torch.cuda, 'memory_allocated')()",
        "triton.knobs.runtime.interpret",
        "triton.runtime.driver.active.get_current_stream()",
    ],
)
def test_torch_reads_that_reveal_the_judge_or_count_calls_are_refused(read):
    assert source_probes({"kernel.py": f"import torch\nimport triton\n\nX = {read}\n"}, {}), read
    imported = "from torch import initial_seed\n"
    assert source_probes({"kernel.py": imported}, {}) == [
        "kernel.py:1: imports initial_seed from torch"
    ]


NEW_CHANNELS = (
    "cpu_time_bomb",
    "libc_clock",
    "proc_stat",
    "host_name",
    "allocator_reading",
    "rng_position",
    "process_coin",
)
"""The fixtures for channels the deny-list of names left open."""


@pytest.mark.parametrize("name", NEW_CHANNELS)
def test_every_channel_the_deny_list_left_open_is_refused_in_the_sources(name):
    """What the tuning and registration scope gates and `install` check, without a run."""
    assert source_probes({"cheat.py": (CHEATS / f"{name}.py").read_text()}, {}), name


@pytest.mark.parametrize("name", ["rms_kernel", "autotune_honest", "value_memo", "device_memory"])
def test_the_honest_kernels_the_fixtures_build_on_ask_nothing(name):
    source = (CHEATS / f"{name}.py").read_text()
    allowed = {"device_memory": ["reads .memory_snapshot"]}.get(name, [])  # a cheat's helper
    found = source_probes({"kernel.py": source}, {})
    assert [line.split(": ", 1)[1] for line in found] == allowed


def test_the_shipped_operators_pass_the_rule_registration_holds_them_to():
    """Every catalog kernel (and the fused kernels written to be registered) as a new file; the
    catalog's test helper `checking.py` copies a declaration's fields by computed name."""
    paths = [p for p in (ROOT / "operators" / "catalog").glob("*.py") if p.name != "checking.py"]
    paths += (ROOT / "kernels").glob("*_fused.py")
    for path in sorted(paths):
        found = source_probes({"operators/catalog/x.py": path.read_text()}, {}, "operators")
        assert found == [], path


@pytest.fixture
def restored_queries():
    """Every query function the tripwires wrap, put back after the test."""
    targets = [*WRAPPED]
    targets += [
        (importlib.import_module(m), n) for m, names in TORCH_WRAPPED.items() for n in names
    ]
    originals = [(module, name, getattr(module, name)) for module, name in targets]
    yield
    for module, name, original in originals:
        setattr(module, name, original)


def _load(path: Path) -> dict:
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_a_query_from_the_solutions_files_is_recorded_and_still_answered(
    tmp_path, restored_queries
):
    solution = tmp_path / "solution"
    solution.mkdir()
    probe = solution / "probe.py"
    probe.write_text(
        "import operator, sys\n\n\ndef ask():\n"
        "    return operator.attrgetter('get' + 'profile')(sys)()\n"
    )
    tripwires = EnvironmentQueryTripwires([str(solution)])
    assert sys.getprofile() is None and threading.gettrace() is None and os.getpid() > 0
    assert tripwires.findings == []  # the evaluator's own calls pass unseen
    assert _load(probe)["ask"]() is None
    (finding,) = tripwires.findings
    assert str(finding) == "asks where it runs: sys.getprofile() from probe.py:5"


def test_torchs_counters_reached_by_a_hidden_name_are_recorded_and_still_answered(
    tmp_path, restored_queries
):
    solution = tmp_path / "solution"
    solution.mkdir()
    probe = solution / "probe.py"
    probe.write_text(
        "import functools\n\n\ndef ask(torch):\n"
        "    read = functools.reduce(getattr, ['cuda', 'memory_' + 'allocated'], torch)\n"
        "    return read(), torch.random.initial_seed()\n"
    )
    tripwires = EnvironmentQueryTripwires([str(solution)])
    seed = torch.initial_seed()
    assert torch.cuda.memory_allocated() == 0 and tripwires.findings == []
    assert _load(probe)["ask"](torch) == (0, seed)
    assert [str(finding) for finding in tripwires.findings] == [
        "asks where it runs: torch.cuda.memory_allocated() from probe.py:6",
        "asks where it runs: torch.random.initial_seed() from probe.py:6",
    ]


def test_the_sources_are_checked_again_where_the_solution_never_runs(task_root, tmp_path):
    """The evaluating process reads the solution's sources itself, so erasing the candidate
    process's notes (`findings_wipe`, caught there walking frames) cannot clear a spelled read."""
    from cheat_packing import cheat_solution

    from gates.evaluator.detectors.environment_probes import EnvironmentInspection
    from gates.evaluator.evaluation import spelled_probes
    from gates.tasks.package import load_task
    from gates.tasks.solution import load_solution

    task = load_task(task_root / "rms_norm")
    wipe = load_solution(cheat_solution("findings_wipe", tmp_path))
    found = spelled_probes(task, wipe)
    assert isinstance(found, EnvironmentInspection) and "imports os" in found.reason
    assert spelled_probes(task, task.baseline) is None


@pytest.mark.parametrize(
    "source",
    ["flip = hash('x') % 1000\n", "key = id(object())\n", "def f(t):\n    return t.data_ptr()\n",
     "from builtins import hash\n", "h = 'x'.__hash__()\n"],
)  # fmt: skip
def test_values_that_differ_from_process_to_process_are_refused(source):
    assert source_probes({"kernel.py": source}, {}), source
