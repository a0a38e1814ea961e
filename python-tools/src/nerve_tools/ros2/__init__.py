"""ROS 2: :mod:`.cli` is ``nerve ros2`` (nerve channels as DDS or rmw_zenoh
topics), :mod:`.exec` the launcher that runs a ROS 2 program on rmw_nerve
(``nerve ros2 exec``), :mod:`.types` typed ROS 2 channels in Python and
:mod:`.rmw_zenoh` rmw_zenoh's key space and attachments."""
