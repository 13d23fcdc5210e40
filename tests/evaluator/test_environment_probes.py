"""A solution may not ask where or when it runs: new reads of the loaded modules, profiler
hooks, environment, argv, process, clocks or randomness are refused from its sources, and the
query functions record calls made from its files (the end-to-end fixtures are in
test_evaluator_cheats.py)."""

import os
import sys
import threading

from gates.evaluator.detectors.environment_probes import (
    WRAPPED,
    EnvironmentQueryTripwires,
    source_probes,
)

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


def test_a_query_from_the_solutions_files_is_recorded_and_still_answered(tmp_path):
    originals = [(module, name, getattr(module, name)) for module, name in WRAPPED]
    solution = tmp_path / "solution"
    solution.mkdir()
    probe = solution / "probe.py"
    probe.write_text(
        "import operator, sys\n\n\ndef ask():\n"
        "    return operator.attrgetter('get' + 'profile')(sys)()\n"
    )
    try:
        tripwires = EnvironmentQueryTripwires([str(solution)])
        assert sys.getprofile() is None and threading.gettrace() is None and os.getpid() > 0
        assert tripwires.findings == []  # the evaluator's own calls pass unseen
        namespace: dict = {}
        exec(compile(probe.read_text(), str(probe), "exec"), namespace)
        assert namespace["ask"]() is None
        (finding,) = tripwires.findings
        assert str(finding) == "asks where it runs: sys.getprofile() from probe.py:5"
    finally:
        for module, name, original in originals:
            setattr(module, name, original)
