"""Select the Triton interpreter before any test module imports `triton.language`.

Triton's own `@jit` helpers (`tl.sum`, `tl.max`, ...) are bound at import time, so the
interpreter must be chosen before a test file's `import triton` runs.
"""

import operators.triton_runtime  # noqa: F401
