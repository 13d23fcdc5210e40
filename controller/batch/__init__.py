"""Batches: `controller tune-all` tunes many operators, each as its own `tune run`, on
one host's GPUs (one worker and one device lock per GPU) or on a Ray cluster."""
