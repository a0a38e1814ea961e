"""ROS 2 nodes for the deadline and liveliness tests (test_rmw_events.py),
run with the wheels' Python under `nerve-ros2-exec`:
python events_nodes.py ROLE [ARGS].

Each role says what the test waits for on a line of its own and ends with
one line of JSON; every wait is bounded (nodes.spin_until)."""

import sys
import time

import rclpy
from nodes import say, spin_until
from rclpy.duration import Duration
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import LivelinessPolicy, QoSProfile

DEADLINE = QoSProfile(depth=10, deadline=Duration(seconds=0.1))
MANUAL = QoSProfile(depth=10, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
                    liveliness_lease_duration=Duration(seconds=0.3))


def role_deadline():
    """A publisher at 20 Hz with a 100 ms deadline, and a subscription with
    the same, for 1 s; then the publisher pauses: both sides must report
    deadlines missed."""
    from std_msgs.msg import String

    rclpy.init()
    n = Node("deadline")
    offered, requested, got = [], [], []
    pub = n.create_publisher(String, "/dl", DEADLINE, event_callbacks=PublisherEventCallbacks(
        deadline=lambda e: offered.append([e.total_count, e.total_count_change])))
    n.create_subscription(
        String, "/dl", lambda m: got.append(m.data), DEADLINE,
        event_callbacks=SubscriptionEventCallbacks(
            deadline=lambda e: requested.append([e.total_count, e.total_count_change])))
    sent = [0]

    def tick():
        if sent[0] < 20:
            pub.publish(String(data=str(sent[0])))
            sent[0] += 1

    timer = n.create_timer(0.05, tick)
    spin_until(n, lambda: sent[0] >= 20 and len(got) >= 20)
    timer.cancel()
    before = (len(offered), len(requested))
    # Paused: each 100 ms without a message is a deadline missed, on both sides.
    spin_until(n, lambda: len(offered) > before[0] and len(requested) > before[1]
               and offered[-1][0] >= 3 and requested[-1][0] >= 3)
    say({"got": got, "offered": offered, "requested": requested, "before": before,
         "qos_deadline": pub.qos_profile.deadline.nanoseconds})
    n.destroy_node()
    rclpy.shutdown()


def role_live_pub():
    """An automatic publisher on /auto and a manual-by-topic one (lease
    300 ms) on /manual, which publishes for 1 s, stops until its liveliness
    is lost, then asserts it for 1 s when told (a line on stdin)."""
    from std_msgs.msg import String

    rclpy.init()
    n = Node("live_pub")
    lost = []
    n.create_publisher(String, "/auto", 10)
    man = n.create_publisher(String, "/manual", MANUAL, event_callbacks=PublisherEventCallbacks(
        liveliness=lambda e: lost.append([e.total_count, e.total_count_change])))
    say("ready")
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        man.publish(String(data="x"))
        rclpy.spin_once(n, timeout_sec=0.05)
    say("stopped")
    had = len(lost)
    spin_until(n, lambda: len(lost) > had)
    say(f"lost {lost}")
    sys.stdin.readline()
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        man.assert_liveliness()
        rclpy.spin_once(n, timeout_sec=0.05)
    say("asserted")
    sys.stdin.readline()  # killed here by the test
    say({"lost": lost})


def role_live_sub():
    """Subscriptions to /auto and /manual that record their liveliness
    changed events, in steps the test drives through stdin."""
    from std_msgs.msg import String

    rclpy.init()
    n = Node("live_sub")
    ev = {"/auto": [], "/manual": []}

    def sub(topic):
        n.create_subscription(String, topic, lambda m: None, 10,
                              event_callbacks=SubscriptionEventCallbacks(
                                  liveliness=lambda e: ev[topic].append(
                                      [e.alive_count, e.not_alive_count,
                                       e.alive_count_change, e.not_alive_count_change])))

    sub("/auto")
    sub("/manual")

    def now(topic, alive, dead, since=0):
        return any(e[0] == alive and e[1] == dead for e in ev[topic][since:])

    say("ready")
    spin_until(n, lambda: now("/auto", 1, 0) and now("/manual", 1, 0))
    say("alive")
    sys.stdin.readline()  # the publisher stopped and lost its liveliness
    spin_until(n, lambda: ev["/manual"] and ev["/manual"][-1][:2] == [0, 1])
    say("manual lost")
    mark = len(ev["/manual"])
    sys.stdin.readline()  # the publisher asserts its liveliness
    spin_until(n, lambda: now("/manual", 1, 0, mark))
    say("manual back")
    sys.stdin.readline()  # the publisher's process was killed
    spin_until(n, lambda: ev["/auto"][-1][:2] == [0, 0] and ev["/manual"][-1][:2] == [0, 0])
    say(ev)
    n.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    globals()["role_" + sys.argv[1]](*sys.argv[2:])
