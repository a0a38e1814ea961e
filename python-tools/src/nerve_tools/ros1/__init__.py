"""``nerve ros1``: nerve channels as ROS 1 topics. :mod:`.bridge` is the
node (master registration, publishers and subscribers), :mod:`.wire` the
XML-RPC and TCPROS framing, :mod:`.msg` the message definitions and their
MD5 sums."""
