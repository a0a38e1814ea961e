"""``nerve bridge``: nerve channels between hosts over Zenoh. :mod:`.cli`
is the command, :mod:`.engine` the exporters and importers, :mod:`.wire`
the key space, session and attachment formats peers agree on, and
:mod:`.registry` the files by which local tools see a running bridge;
:mod:`.rmw_zenoh` the same session speaking ROS 2's rmw_zenoh instead
(``--ros2``)."""
