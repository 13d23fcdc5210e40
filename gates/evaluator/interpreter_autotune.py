"""`@triton.autotune` under the Triton interpreter (CPU): there is no benchmarker there, so an
honest autotuned kernel would fail with "0 active drivers". The candidate process makes the
autotuner keep only the first configuration of each kernel, and the verdict says so."""


def use_first_config(notes: list[str]) -> None:
    """Make every autotuner in this process run its first configuration without timing."""
    from triton.runtime.autotuner import Autotuner

    original = Autotuner.prune_configs

    def first_config(self, kwargs):
        configs = original(self, kwargs)
        if len(configs) > 1:
            note = (
                f"autotune: {getattr(self.base_fn, '__name__', 'a kernel')} ran its first "
                f"configuration of {len(configs)} (no benchmarking under the interpreter)"
            )
            if note not in notes:
                notes.append(note)
        return configs[:1]

    Autotuner.prune_configs = first_config
