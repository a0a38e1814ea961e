"""ROS 2: :mod:`.cli` is ``nerve ros2`` (nerve channels as DDS topics, or
as rmw_zenoh topics through ``nerve bridge --ros2``,
:mod:`nerve_tools.bridge.rmw_zenoh`), :mod:`.exec` the launcher that runs a
ROS 2 program on rmw_nerve (``nerve ros2 exec``), :mod:`.types` typed ROS 2
channels in Python."""
