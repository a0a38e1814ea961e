"""python -m nerve_tools.ros2: the same as ``nerve ros2``."""

import sys

from .cli import main

sys.exit(main())
