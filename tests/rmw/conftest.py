"""The fixture every rmw_nerve test shares: a ROS domain of the test's own.

rmw_nerve names domain N's channels ros2-dN.* and its graphs ros2-graph-dN.*;
a random domain in 1000..60000 keeps a test apart from real domains (which
nerve ros2 limits to 0..232) and from the other tests, and the fixture
removes every channel of the domain afterwards."""

from __future__ import annotations

import random

import pytest
from rmwtest import drop_domain


@pytest.fixture
def domain():
    d = random.randint(1000, 60000)
    yield d
    drop_domain(d)
