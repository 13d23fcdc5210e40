"""What a direct call-site call of the parity probe is given: the arguments the site first saw,
every tensor of the call's batch redrawn at another leading size.

Loaded by `parity_probe.py` from its file (that script imports nothing from the controller's
packages), so it imports nothing either: torch comes in as an argument.
"""


def drawn_inputs(args: tuple, kwargs: dict, size: int, seed: int, torch):
    """The arguments with every tensor that shares the first tensor's leading size resized to
    `size` and filled with random values like the seen ones (other tensors kept). Tensors held
    in lists, tuples and dicts are redrawn too: a layer's modulations passed as tuples must
    keep the batch its activations have, or the call reads past them."""
    tensors = tensors_in([list(args), kwargs], torch)
    leading = next((t.shape[0] for t in tensors if t.dim() >= 1), None)
    generator = torch.Generator().manual_seed(seed)

    def redraw(value):
        if isinstance(value, list | tuple):
            items = [redraw(item) for item in value]
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, dict):
            return {key: redraw(item) for key, item in value.items()}
        if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.shape[0] != leading:
            return value
        shape = (size, *value.shape[1:])
        seen = value.detach().cpu()
        if seen.is_floating_point():
            floats = seen.double()
            spread = float(floats.std()) if seen.numel() > 1 else 1.0
            drawn = torch.randn(shape, generator=generator, dtype=torch.float64)
            drawn = drawn * (spread or 1.0) + float(floats.mean())
        else:
            flat = seen.reshape(-1)
            picks = torch.randint(0, max(flat.numel(), 1), shape, generator=generator)
            drawn = flat[picks] if flat.numel() else torch.zeros(shape, dtype=seen.dtype)
        return drawn.to(dtype=value.dtype, device=value.device)

    return [redraw(a) for a in args], {k: redraw(v) for k, v in kwargs.items()}


def tensors_in(value, torch) -> list:
    """Every tensor in `value`, through lists, tuples and dicts (by sorted key), in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for item in value for t in tensors_in(item, torch)]
    if isinstance(value, dict):
        return [t for key in sorted(value) for t in tensors_in(value[key], torch)]
    return []
