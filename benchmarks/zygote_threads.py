"""Which of the zygote's imports starts a thread, and what the thread is called: run on the
machine where `controller evaluate` reports that its zygote will not fork."""

import importlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # as the zygote runs
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def thread_names() -> list[str]:
    names = []
    for task in sorted(os.listdir("/proc/self/task")):
        with open(f"/proc/self/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return names


def main() -> None:
    from gates.evaluator.zygote import PRELOADED_MODULES

    print("after gates.evaluator.zygote:", thread_names())
    for name in PRELOADED_MODULES:
        importlib.import_module(name)
        print(f"after {name}:", thread_names())
    maps = Path("/proc/self/maps").read_text()
    print("libcuda mapped:", "libcuda.so" in maps, "libnvidia-ml mapped:", "libnvidia-ml" in maps)


if __name__ == "__main__":
    main()
