"""`python -m controller` runs the CLI."""

import sys

from controller.cli import main

sys.exit(main())
