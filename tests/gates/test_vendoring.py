"""Vendoring: the production path's module closure, imports made relative, and the kernel
runtime always present, so a fusion whose production path is plain PyTorch can be tuned with
a Triton kernel that launches as the catalog's do."""

from gates.tasks.vendoring import KERNEL_RUNTIME, vendor_module_of
from operators.catalog.qkv_projection import qkv_projection_kernel


def test_a_plain_pytorch_production_path_comes_with_the_kernel_runtime():
    entry, sources = vendor_module_of(qkv_projection_kernel)
    assert entry == "operators/catalog/qkv_projection.py"
    assert set(KERNEL_RUNTIME) <= set(sources)
    launcher = sources["operators/kernel_launch.py"]
    assert "from ..operators import triton_runtime" in launcher
    assert "\nfrom operators" not in "\n" + "\n".join(sources.values())
