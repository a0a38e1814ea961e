"""python -m nerve_tools.ros1: the same as ``nerve ros1``."""

import sys

from .bridge import main

sys.exit(main())
