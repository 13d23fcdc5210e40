"""Checkpoints the controller makes: random-weight skeletons of a model's safetensors files."""
