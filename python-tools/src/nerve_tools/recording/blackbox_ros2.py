"""The ROS 2 service of `nerve blackbox --ros2-service NAME`.

Run by the recorder, under `nerve ros2 exec` with a ROS 2 Python (rclpy on
rmw_nerve_cpp), as a script: it imports neither nerve nor nerve_tools, which
that Python need not have. It serves NAME with std_srvs/srv/Trigger where
that package is installed, else test_msgs/srv/Empty (the ROS 2 wheels on
PyPI carry test_msgs, not std_srvs), and for each call writes one line,
a JSON object {"client": ...}, to its standard output, which the recorder
reads as a trigger. It prints "ready TYPE" once the service is up, and
ends when its standard input (the recorder's end of a pipe) is closed.

    python blackbox_ros2.py SERVICE
"""

import json
import os
import select
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: blackbox_ros2.py SERVICE", file=sys.stderr)
        return 2
    service = sys.argv[1]
    import rclpy

    try:
        from std_srvs.srv import Trigger as Srv

        kind = "std_srvs/srv/Trigger"
    except ImportError:
        from test_msgs.srv import Empty as Srv

        kind = "test_msgs/srv/Empty"
    rclpy.init()
    node = rclpy.create_node(f"nerve_blackbox_{os.getpid()}")
    calls = [0]

    def serve(req, resp):  # noqa: ANN001 (rclpy's types)
        calls[0] += 1
        print(json.dumps({"call": calls[0]}), flush=True)
        if hasattr(resp, "success"):
            resp.success = True
            resp.message = "incident triggered"
        return resp

    node.create_service(Srv, service, serve)
    print(f"ready {kind}", flush=True)
    try:
        while True:
            rclpy.spin_once(node, timeout_sec=0.1)
            # The recorder gone (its pipe closed): end.
            if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.buffer.read1(1):
                break
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
