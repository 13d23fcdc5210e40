"""A pi0.5-shaped target model whose math runs through the operator registry.

It is the bundled target the quick start, the tests and the benchmarks register and tune
operators on; see `examples.model` for the whole forward pass.
"""
