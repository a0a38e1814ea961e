"""python -m nerve_tools.bridge: the same as ``nerve bridge``."""

import sys

from .cli import main

sys.exit(main())
