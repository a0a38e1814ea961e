"""``nerve bridge``: nerve channels between hosts over Zenoh. Its data path
is the Rust program nerve-bridge-rs (rust/nerve-bridge); :mod:`.cli` is the
command that runs it, and keeps in Python what is no data path of nerve's
own: ``nerve bridge ls`` (``nerve ls --remote``) and ``--ros2``
(:mod:`.rmw_zenoh`, the session speaking ROS 2's rmw_zenoh). :mod:`.wire`
holds the key space, session setup and formats peers agree on, and
:mod:`.registry` reads the files by which local tools (``nerve top``) see
a running bridge."""
