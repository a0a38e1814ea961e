"""nerve-tools: the Python verbs of the ``nerve`` command, one subpackage per
noun (docs/tools.md, docs/architecture.md):

- ``channel``: ``nerve echo``, ``nerve pub``, ``nerve hz``, ``nerve bw``,
  ``nerve delay`` (live reads and writes of one channel);
- ``recording``: ``nerve record``, ``nerve play``, ``nerve blackbox`` (MCAP);
- ``monitor``: ``nerve top``, ``nerve who``, ``nerve graph``;
- ``viz``: ``nerve foxglove``, ``nerve plot``;
- ``bridge``: ``nerve bridge`` (other hosts over Zenoh; ROS 2 over rmw_zenoh);
- ``ros1``: ``nerve ros1``; ``ros2``: ``nerve ros2`` and ``nerve ros2 exec``;
- ``codec`` (payload decoding, built-in schemas) and ``ros2gen`` (C++ ROS 2
  message types) serve the verbs above.

The verbs are the ``nerve-*`` entry points of pyproject.toml; ``nerve VERB``
runs ``nerve-VERB`` from the PATH."""

__version__ = "0.1.0"
