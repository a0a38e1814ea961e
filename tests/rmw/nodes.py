"""ROS 2 nodes for the rmw_nerve tests, run by test_rmw_nerve.py with the
Jazzy wheels' Python under `nerve-ros2-exec`: python nodes.py ROLE [ARGS].

Each role prints "ready" when the test may go on, and at the end one line
of JSON with what it saw. Every wait is bounded."""

import json
import os
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
W, H = 1920, 1080
CLOUD_POINTS = 65536  # x 16 bytes = 1 MiB


def say(obj):
    print(obj if isinstance(obj, str) else json.dumps(obj), flush=True)


def spin_until(node, cond, limit=30.0):
    end = time.monotonic() + limit
    while not cond() and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    return cond()


def sockets(pid="self"):
    """(sockets, UDP sockets) among the process's file descriptors."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            t = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    udp = 0
    for f in ("udp", "udp6"):
        with open(f"/proc/{pid}/net/{f}") as fh:
            for line in fh.readlines()[1:]:
                if line.split()[9] in inodes:
                    udp += 1
    return len(inodes), udp


def make_types():
    from sensor_msgs.msg import Image, Imu, PointCloud2, PointField
    from std_msgs.msg import String

    s = String(data="hello nerve \u00e9")
    imu = Imu()
    imu.header.frame_id = "imu_link"
    imu.header.stamp.sec, imu.header.stamp.nanosec = 1234, 5678
    imu.orientation.x, imu.orientation.w = 0.25, 0.75
    imu.angular_velocity.z = -1.5
    imu.linear_acceleration.x = 9.81
    imu.orientation_covariance = [float(i) for i in range(9)]
    pc = PointCloud2()
    pc.header.frame_id = "lidar"
    pc.height, pc.width = 1, CLOUD_POINTS
    pc.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                 for i, n in enumerate("xyzi")]
    pc.point_step, pc.row_step = 16, 16 * CLOUD_POINTS
    pc.data = bytes((i * 7 + 3) & 0xFF for i in range(256)) * (CLOUD_POINTS // 16)
    img = Image()
    img.header.frame_id = "camera"
    img.height, img.width, img.encoding, img.step = H, W, "rgb8", 3 * W
    img.data = bytes(range(1, 252)) * (3 * W * H // 251) + bytes(3 * W * H % 251)
    return {"/t/string": s, "/t/imu": imu, "/t/cloud": pc, "/t/image": img}


def role_types_pub():
    rclpy.init()
    n = Node("types_pub")
    msgs = make_types()
    pubs = [n.create_publisher(type(m), t, LATCHED) for t, m in msgs.items()]
    for p, m in zip(pubs, msgs.values()):
        p.publish(m)
    say("ready")
    sys.stdin.readline()  # until the test closes stdin
    say({"sockets": sockets()})
    n.destroy_node()
    rclpy.shutdown()


def role_types_sub():
    rclpy.init()
    n = Node("types_sub")
    want = make_types()
    got = {}
    for t, m in want.items():
        n.create_subscription(type(m), t, lambda msg, t=t: got.setdefault(t, msg), LATCHED)
    spin_until(n, lambda: len(got) == len(want))
    equal = {t: (t in got and got[t] == m) for t, m in want.items()}
    say({"equal": equal, "sockets": sockets(), "rmw": rclpy.get_rmw_implementation_identifier()})
    n.destroy_node()
    rclpy.shutdown()


def role_multi_pub(name, count):
    from std_msgs.msg import String

    rclpy.init()
    n = Node("multi_pub_" + name)
    p = n.create_publisher(String, "/multi", 100)
    ok = spin_until(n, lambda: n.count_subscribers("/multi") >= 2)
    for i in range(int(count)):
        p.publish(String(data=f"{name}-{i}"))
    say({"saw_subscribers": ok})
    n.destroy_node()
    rclpy.shutdown()


def role_multi_sub(count):
    from rclpy.executors import MultiThreadedExecutor
    from std_msgs.msg import String

    rclpy.init()
    ex = MultiThreadedExecutor(num_threads=4)  # takes in worker threads
    got = [[], []]
    nodes = []
    for k in range(2):
        nd = Node(f"multi_sub_{k}")
        nd.create_subscription(String, "/multi", lambda m, k=k: got[k].append(m.data), 100)
        ex.add_node(nd)
        nodes.append(nd)
    say("ready")
    want = 2 * int(count)
    end = time.monotonic() + 30
    while min(len(g) for g in got) < want and time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)
    say({"got": got})
    rclpy.shutdown()


def role_lost():
    from rclpy.event_handler import SubscriptionEventCallbacks
    from std_msgs.msg import String

    rclpy.init()
    n = Node("lost")
    events = []
    got = []
    cbs = SubscriptionEventCallbacks(message_lost=lambda e: events.append(
        (e.total_count, e.total_count_change)))
    qos = QoSProfile(depth=4, history=HistoryPolicy.KEEP_LAST)
    n.create_subscription(String, "/lost", lambda m: got.append(m.data), qos,
                          event_callbacks=cbs)
    p = n.create_publisher(String, "/lost", qos)
    for i in range(20):
        p.publish(String(data=str(i)))
    spin_until(n, lambda: len(got) >= 4 and events, limit=10)
    for _ in range(5):
        rclpy.spin_once(n, timeout_sec=0.05)
    say({"got": got, "events": events})
    n.destroy_node()
    rclpy.shutdown()


def role_stamps():
    """One message through a channel sized by NERVE_RMW_DATA_SIZE: its
    source_timestamp (realtime, from nerve_clock_to_realtime_ns) and the
    wall clock around the publish."""
    from std_msgs.msg import String

    rclpy.init()
    n = Node("stamps")
    qos = QoSProfile(depth=4, history=HistoryPolicy.KEEP_LAST)
    s = n.create_subscription(String, "/stamps", lambda m: None, qos)
    p = n.create_publisher(String, "/stamps", qos)
    before = time.time_ns()
    p.publish(String(data="x"))
    after = time.time_ns()
    taken = None
    deadline = time.monotonic() + 10
    while taken is None and time.monotonic() < deadline:
        with s.handle:
            taken = s.handle.take_message(String, False)
        time.sleep(0.01)
    info = taken[1] if taken else {}
    say({"before": before, "after": after, "source": info.get("source_timestamp")})
    sys.stdin.readline()  # the test looks at the channel meanwhile
    n.destroy_node()
    rclpy.shutdown()


def role_qos_refuse():
    from std_msgs.msg import String

    rclpy.init()
    n = Node("qos_refuse")
    errors = {}
    keep_all = QoSProfile(depth=10, history=HistoryPolicy.KEEP_ALL)
    for kind, make in (("pub", n.create_publisher), ("sub", None)):
        try:
            if kind == "pub":
                make(String, "/refused", keep_all)
            else:
                n.create_subscription(String, "/refused", lambda m: None, keep_all)
            errors[kind] = None
        except Exception as e:  # noqa: BLE001 - the message is the point
            errors[kind] = str(e)
    say({"errors": errors, "topics": [t for t, _ in n.get_topic_names_and_types()]})
    n.destroy_node()
    rclpy.shutdown()


def role_param_server():
    rclpy.init()
    n = Node("pserver")
    n.declare_parameter("gain", 1.5)
    n.declare_parameter("label", "x")
    say("ready")
    end = time.monotonic() + 120
    while time.monotonic() < end:
        rclpy.spin_once(n, timeout_sec=0.1)


def role_param_client():
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters

    rclpy.init()
    n = Node("pclient")
    out = {}

    def call(srv_type, name, req):
        cli = n.create_client(srv_type, name)
        if not cli.wait_for_service(timeout_sec=10):
            return None
        fut = cli.call_async(req)
        rclpy.spin_until_future_complete(n, fut, timeout_sec=10)
        return fut.result()

    r = call(ListParameters, "/pserver/list_parameters", ListParameters.Request())
    out["list"] = sorted(r.result.names) if r else None
    r = call(GetParameters, "/pserver/get_parameters", GetParameters.Request(names=["gain"]))
    out["get"] = r.values[0].double_value if r else None
    v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=2.5)
    r = call(SetParameters, "/pserver/set_parameters",
             SetParameters.Request(parameters=[Parameter(name="gain", value=v)]))
    out["set"] = r.results[0].successful if r else None
    r = call(GetParameters, "/pserver/get_parameters", GetParameters.Request(names=["gain"]))
    out["get_after_set"] = r.values[0].double_value if r else None
    out["nodes_before"] = sorted(nm for nm, _ in n.get_node_names_and_namespaces())
    out["services_of_server"] = sorted(
        s for s, _ in n.get_service_names_and_types_by_node("pserver", "/"))
    cli = n.create_client(GetParameters, "/pserver/get_parameters")
    say(json.dumps({"phase": "kill"}))
    sys.stdin.readline()  # the test killed the server with SIGKILL
    t0 = time.monotonic()
    gone = spin_until(n, lambda: "pserver" not in [nm for nm, _ in
                                                   n.get_node_names_and_namespaces()],
                      limit=20)
    out["gone"] = gone
    out["gone_after_s"] = round(time.monotonic() - t0, 3)
    out["service_ready_after_kill"] = cli.service_is_ready()
    try:
        cli.call_async(GetParameters.Request(names=["gain"]))
        out["call_after_kill"] = "no error"
    except Exception as e:  # noqa: BLE001 - the message is the point
        out["call_after_kill"] = str(e)
    say(out)
    n.destroy_node()
    rclpy.shutdown()


def role_graph():
    from std_msgs.msg import String

    rclpy.init()
    n = Node("watcher")
    out = {}

    def counts():
        return n.count_publishers("/g/topic"), n.count_subscribers("/g/topic")

    say("ready")
    spin_until(n, lambda: counts() == (1, 1), limit=20)
    out["with_other"] = counts()
    info = n.get_publishers_info_by_topic("/g/topic")
    out["pub_info"] = [(i.node_name, i.node_namespace, i.topic_type) for i in info]
    out["pub_hash"] = [str(i.topic_type_hash) for i in info]
    out["topics"] = dict((t, ty) for t, ty in n.get_topic_names_and_types())
    say(json.dumps({"phase": "kill"}))
    sys.stdin.readline()
    t0 = time.monotonic()
    spin_until(n, lambda: counts() == (0, 0), limit=20)
    out["after_kill"] = counts()
    out["after_kill_s"] = round(time.monotonic() - t0, 3)
    out["nodes_after"] = sorted(nm for nm, _ in n.get_node_names_and_namespaces())
    n.create_publisher(String, "/g/own", 1)
    out["own_topic"] = "/g/own" in dict(n.get_topic_names_and_types())
    # The killed node's topic (its channel) keeps working for the others.
    got = []
    n.create_subscription(String, "/g/topic", lambda m: got.append(m.data), 10)
    p = n.create_publisher(String, "/g/topic", 10)
    p.publish(String(data="after"))
    spin_until(n, lambda: "after" in got, limit=10)
    out["after_kill_got"] = got
    say(out)
    n.destroy_node()
    rclpy.shutdown()


def role_graph_other():
    from std_msgs.msg import String

    rclpy.init()
    n = Node("other", namespace="/ns1")
    p = n.create_publisher(String, "/g/topic", 1)
    n.create_subscription(String, "/g/topic", lambda m: None, 1)
    p.publish(String(data="before"))  # the channel is this node's
    say("ready")
    end = time.monotonic() + 120
    while time.monotonic() < end:
        rclpy.spin_once(n, timeout_sec=0.1)


def role_bad():
    from std_msgs.msg import String

    rclpy.init()
    n = Node("bad")
    out = {}
    for kind in ("sub", "pub"):
        try:
            if kind == "sub":
                n.create_subscription(String, "/foreign", lambda m: None, 10)
            else:
                n.create_publisher(String, "/foreign", 10)
            out[kind] = None
        except Exception as e:  # noqa: BLE001 - the message is the point
            out[kind] = str(e)
    got = []
    n.create_subscription(String, "/corrupt", lambda m: got.append(m.data), 10)
    late = []  # its channel is made later, by a nerve program
    n.create_subscription(String, "/late", lambda m: late.append(m.data), 10)
    # Another node's type on the same topic: refused, not mixed.
    from std_msgs.msg import Int32

    try:
        n.create_publisher(Int32, "/corrupt", 10)
        out["other_type"] = None
    except Exception as e:  # noqa: BLE001 - the message is the point
        out["other_type"] = str(e)
    say("ready")
    spin_until(n, lambda: "valid" in got and late, limit=20)
    out["corrupt_got"] = got
    out["late_got"] = late
    say(out)
    n.destroy_node()
    rclpy.shutdown()


def role_type_mismatch():
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Int32, String

    def status(e):
        # rclpy (Jazzy, Kilted) binds only total_count_change of this status.
        return getattr(e, "total_count_change", None)

    rclpy.init()
    a, b = Node("mm_pub"), Node("mm_sub")
    ev = {"pub": [], "sub": []}
    a.create_publisher(Int32, "/mm", 10, event_callbacks=PublisherEventCallbacks(
        incompatible_type=lambda e: ev["pub"].append(status(e))))
    b.create_subscription(String, "/mm", lambda m: None, 10,
                          event_callbacks=SubscriptionEventCallbacks(
                              incompatible_type=lambda e: ev["sub"].append(status(e))))
    ex = SingleThreadedExecutor()
    ex.add_node(a)
    ex.add_node(b)
    end = time.monotonic() + 20
    while not (ev["pub"] and ev["sub"]) and time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)
    say(ev)
    rclpy.shutdown()


def qos_status(e):
    from rclpy.qos import QoSPolicyKind

    return [e.total_count, e.total_count_change, QoSPolicyKind(e.last_policy_kind).name]


# (topic, publisher's QoS, subscription's QoS, the policy they break or None)
QOS_PAIRS = (
    ("/q/rel", QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT),
     QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE), "RELIABILITY"),
    ("/q/dur", QoSProfile(depth=10, durability=DurabilityPolicy.VOLATILE),
     QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL), "DURABILITY"),
    ("/q/ok", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL),
     QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.VOLATILE), None),
)


def role_qos_mismatch(order):
    """Every pair of QOS_PAIRS in one process (two nodes), publishers or
    subscriptions first; the events each side got, what the subscriptions
    received, and rmw_qos_profile_check_compatible's answers."""
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import LivelinessPolicy, qos_check_compatible
    from std_msgs.msg import String

    rclpy.init()
    a, b = Node("qos_pub"), Node("qos_sub")
    ev = {t: {"pub": [], "sub": []} for t, *_ in QOS_PAIRS}
    got = {t: [] for t, *_ in QOS_PAIRS}
    pubs = {}

    def make_pubs():
        for t, pq, _, _ in QOS_PAIRS:
            pubs[t] = a.create_publisher(String, t, pq, event_callbacks=PublisherEventCallbacks(
                incompatible_qos=lambda e, t=t: ev[t]["pub"].append(qos_status(e))))

    def make_subs():
        for t, _, sq, _ in QOS_PAIRS:
            b.create_subscription(
                String, t, lambda m, t=t: got[t].append(m.data), sq,
                event_callbacks=SubscriptionEventCallbacks(
                    incompatible_qos=lambda e, t=t: ev[t]["sub"].append(qos_status(e))))

    ex = SingleThreadedExecutor()
    ex.add_node(a)
    ex.add_node(b)
    first, second = (make_pubs, make_subs) if order == "pub_first" else (make_subs, make_pubs)
    first()
    for _ in range(5):  # let the first side settle before the second appears
        ex.spin_once(timeout_sec=0.02)
    second()
    bad = [t for t, *_, k in QOS_PAIRS if k]

    def done():
        return all(ev[t]["pub"] and ev[t]["sub"] for t in bad)

    end = time.monotonic() + 30
    while not done() and time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)
    # Delivery goes on for incompatible pairs (one ring for every writer).
    for t in pubs:
        pubs[t].publish(String(data="x" + t))
    end = time.monotonic() + 30
    while not all(got.values()) and time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)
    end = time.monotonic() + 0.5  # anything late or extra
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.05)
    checks = {}
    for name, pq, sq in (
            ("rel", QOS_PAIRS[0][1], QOS_PAIRS[0][2]),
            ("dur", QOS_PAIRS[1][1], QOS_PAIRS[1][2]),
            ("ok", QOS_PAIRS[2][1], QOS_PAIRS[2][2]),
            ("default", QoSProfile(depth=10), QoSProfile(depth=10)),
            ("live", QoSProfile(depth=1, liveliness=LivelinessPolicy.AUTOMATIC),
             QoSProfile(depth=1, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC))):
        c, reason = qos_check_compatible(pq, sq)
        checks[name] = [c.name, reason]
    say({"events": ev, "got": got, "checks": checks})
    rclpy.shutdown()


def role_qos_sub():
    """A reliable, transient-local subscription that waits for a publisher
    of another process to appear and for the event."""
    from rclpy.event_handler import SubscriptionEventCallbacks
    from std_msgs.msg import String

    rclpy.init()
    n = Node("qos_sub_alone")
    ev, got = [], []
    n.create_subscription(String, "/q/x", lambda m: got.append(m.data), QOS_PAIRS[1][2],
                          event_callbacks=SubscriptionEventCallbacks(
                              incompatible_qos=lambda e: ev.append(qos_status(e))))
    say("ready")
    spin_until(n, lambda: ev and got, 60)
    say({"events": ev, "got": got})
    n.destroy_node()
    rclpy.shutdown()


def role_qos_pub():
    """A volatile publisher made after the subscription of role_qos_sub."""
    from rclpy.event_handler import PublisherEventCallbacks
    from std_msgs.msg import String

    rclpy.init()
    n = Node("qos_pub_alone")
    ev = []
    p = n.create_publisher(String, "/q/x", QOS_PAIRS[1][1],
                           event_callbacks=PublisherEventCallbacks(
                               incompatible_qos=lambda e: ev.append(qos_status(e))))
    spin_until(n, lambda: ev, 60)
    say("ready")
    # Until the subscriber says it got one (it may be descheduled a while).
    for _ in range(600):
        p.publish(String(data="late"))
        rclpy.spin_once(n, timeout_sec=0.1)
        if sys.stdin in __import__("select").select([sys.stdin], [], [], 0)[0]:
            break
    say({"events": ev})
    n.destroy_node()
    rclpy.shutdown()


def role_planted():
    """Uses /planted both ways; says what each creation said."""
    from std_msgs.msg import String

    rclpy.init()
    n = Node("planted")
    out = {}
    for kind in ("sub", "pub"):
        try:
            if kind == "sub":
                n.create_subscription(String, "/planted", lambda m: None, 10)
            else:
                n.create_publisher(String, "/planted", 10)
            out[kind] = None
        except Exception as e:  # noqa: BLE001 - the message is the point
            out[kind] = str(e)
    say(out)
    n.destroy_node()
    rclpy.shutdown()


def role_planted_live():
    """A publisher on /planted (which publishes once if it was made), then,
    after a line on stdin (the files truncated meanwhile), a publish on it
    and on /live and some spinning: the node is still alive when it says
    so."""
    from std_msgs.msg import String

    rclpy.init()
    n = Node("planted_live")
    pp = None
    try:
        pp = n.create_publisher(String, "/planted", 10)
        pp.publish(String(data="before"))
        say({"pub": None})
    except Exception as e:  # noqa: BLE001 - the message is the point
        say({"pub": str(e)})
    sys.stdin.readline()
    if pp is not None:
        pp.publish(String(data="after"))
    p = n.create_publisher(String, "/live", 10)
    p.publish(String(data="after"))
    for _ in range(5):
        rclpy.spin_once(n, timeout_sec=0.1)
    say({"alive": True, "nodes": [nm for nm, _ in n.get_node_names_and_namespaces()]})
    n.destroy_node()
    rclpy.shutdown()


def role_init_only():
    try:
        rclpy.init()
    except Exception as e:  # noqa: BLE001 - the message is the point
        say({"init": str(e)})
        return
    n = Node("init_only")
    say({"init": None, "nodes": [nm for nm, _ in n.get_node_names_and_namespaces()]})
    n.destroy_node()
    rclpy.shutdown()


def _fibonacci_server(n, feedback_period=0.05):
    """An action server of test_msgs/action/Fibonacci on /fib: one feedback
    per step, cancellable between steps."""
    from rclpy.action import ActionServer, CancelResponse, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from test_msgs.action import Fibonacci

    def execute(handle):
        seq = [0, 1]
        for _ in range(handle.request.order):
            if handle.is_cancel_requested:
                handle.canceled()
                return Fibonacci.Result(sequence=seq)
            seq.append(seq[-1] + seq[-2])
            handle.publish_feedback(Fibonacci.Feedback(sequence=seq))
            time.sleep(feedback_period)
        handle.succeed()
        return Fibonacci.Result(sequence=seq)

    return ActionServer(n, Fibonacci, "/fib", execute,
                        goal_callback=lambda _goal: GoalResponse.ACCEPT,
                        cancel_callback=lambda _handle: CancelResponse.ACCEPT,
                        callback_group=ReentrantCallbackGroup())


def role_sig_wait(kind):
    """Blocks in a wait (rclpy.spin, or a multi-threaded executor's) with
    only a subscription, a service server or an action server, until the
    first SIGINT or SIGTERM; says how the wait ended."""
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
    from std_msgs.msg import String

    rclpy.init()
    n = Node("sig_wait")
    if kind in ("sub", "mt"):
        n.create_subscription(String, "/sig", lambda m: None, 10)
    elif kind == "service":
        from rcl_interfaces.srv import GetParameters

        n.create_service(GetParameters, "/sig_srv", lambda req, rep: rep)
    elif kind == "action":
        keep = _fibonacci_server(n)  # noqa: F841 - kept alive while spinning
    say("ready")
    try:
        if kind == "mt":
            ex = MultiThreadedExecutor(num_threads=4)
            ex.add_node(n)
            ex.spin()
        else:
            rclpy.spin(n)
        say({"ended": "spin returned"})
    except KeyboardInterrupt:
        say({"ended": "KeyboardInterrupt"})
    except ExternalShutdownException:
        say({"ended": "ExternalShutdownException"})
    finally:
        # As ROS 2's examples end: this also stops rclpy's signal thread,
        # which otherwise may still be triggering the executor's guard
        # condition while the interpreter frees it at exit (an rclpy race,
        # seen on Kilted when the process exits as fast as it does here).
        n.destroy_node()
        rclpy.try_shutdown()


def role_action_server():
    """Serves /fib with several threads, so that a cancel request is served
    while a goal executes."""
    from rclpy.executors import MultiThreadedExecutor

    rclpy.init()
    n = Node("fib_server")
    keep = _fibonacci_server(n, feedback_period=float(os.environ.get("FIB_PERIOD", "0.05")))  # noqa: F841
    ex = MultiThreadedExecutor(num_threads=4)
    ex.add_node(n)
    say("ready")
    try:
        ex.spin()
    except (KeyboardInterrupt, Exception):  # noqa: BLE001 - ended by the test
        pass


def role_action_client(mode):
    """mode 'full': a goal to its result, then a goal cancelled midway.
    mode 'killed': a goal whose server the test kills; reports whether the
    client learned that the server is gone."""
    from rclpy.action import ActionClient
    from test_msgs.action import Fibonacci

    rclpy.init()
    n = Node("fib_client")
    c = ActionClient(n, Fibonacci, "/fib")
    out = {"server": c.wait_for_server(timeout_sec=30.0)}
    feedback = []
    # Fibonacci's sequence is int32: order 40 is the longest goal it holds.
    send = c.send_goal_async(Fibonacci.Goal(order=8 if mode == "full" else 40),
                             feedback_callback=lambda f: feedback.append(list(f.feedback.sequence)))
    spin_until(n, send.done)
    handle = send.result()
    out["accepted"] = bool(handle and handle.accepted)
    res = handle.get_result_async()
    if mode == "full":
        spin_until(n, res.done)
        out["result"] = list(res.result().result.sequence)
        out["status"] = res.result().status
        out["feedback"] = feedback
        send2 = c.send_goal_async(Fibonacci.Goal(order=40))
        spin_until(n, send2.done)
        h2 = send2.result()
        spin_until(n, lambda: False, limit=0.3)
        cancel = h2.cancel_goal_async()
        spin_until(n, cancel.done)
        out["cancel_goals"] = len(cancel.result().goals_canceling)
        res2 = h2.get_result_async()
        spin_until(n, res2.done)
        out["cancel_status"] = res2.result().status
    else:
        spin_until(n, lambda: len(feedback) > 0)
        say("feedback")
        gone = spin_until(n, lambda: not c.server_is_ready() or res.done(), limit=60.0)
        out["server_gone"] = gone and not c.server_is_ready()
        out["result_done"] = res.done()
    say(out)
    n.destroy_node()
    rclpy.shutdown()


GROW_QOS = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                      reliability=ReliabilityPolicy.RELIABLE)


# String sizes up and down around rmw_publish's size guess (the last
# message's CDR size rounded up to 64 bytes, plus 64). Message i is "i:"
# and n letters, whose CDR size is n + 2 + 9 (encapsulation, length, NUL)
# below 10 and n + 3 + 9 from 10 on. After 64 letters (75 bytes, guess
# 192), 181 letters fill the guess exactly (192 bytes; guess 256), and 246
# are one byte past it (257). Also below the guess (3, 70, 0, 1) and far
# past it (200, 5000, 4000).
TEXT_SIZES = [10, 3, 200, 70, 5000, 0, 64, 181, 246, 4000, 1]


def _grow_msgs(kind):
    """(message, size tag) in growing order: an Image 100 B to 4 MB, a
    PointCloud2 1 kB to 8 MB, a Path of 0 to 10,000 poses; for "text",
    Strings "i:" + n letters of TEXT_SIZES."""
    if kind == "text":
        from std_msgs.msg import String
        for i, n in enumerate(TEXT_SIZES):
            yield String(data=f"{i}:" + chr(97 + i) * n), n
    elif kind == "image":
        from sensor_msgs.msg import Image
        for i, n in enumerate([100, 1000, 100_000, 1_000_000, 4_000_000]):
            m = Image(height=1, width=n, encoding="mono8", step=n)
            m.header.frame_id = str(i)
            m.data = bytes([i + 1]) * n
            yield m, n
    elif kind == "cloud":
        from sensor_msgs.msg import PointCloud2
        for i, n in enumerate([1000, 10_000, 100_000, 1_000_000, 8_000_000]):
            m = PointCloud2(height=1, width=n // 16, point_step=16, row_step=n)
            m.header.frame_id = str(i)
            m.data = bytes([i + 1]) * n
            yield m, n
    else:
        from geometry_msgs.msg import PoseStamped
        from nav_msgs.msg import Path as NavPath
        for i, n in enumerate(range(0, 10_001, 2000)):
            m = NavPath()
            m.header.frame_id = str(i)
            m.poses = [PoseStamped() for _ in range(n)]
            for k, ps in enumerate(m.poses):
                ps.pose.position.x = float(k)
            yield m, n


def _grow_size(kind, m):
    if kind == "text":
        return len(m.data.split(":", 1)[1])
    return len(m.poses) if kind == "path" else len(m.data)


def role_grow_pub(kind, subs):
    rclpy.init()
    n = Node("grow_pub")
    msgs = list(_grow_msgs(kind))
    p = n.create_publisher(type(msgs[0][0]), "/grow", GROW_QOS)
    spin_until(n, lambda: p.get_subscription_count() >= int(subs))
    say("ready")
    for m, _ in msgs:
        p.publish(m)
        spin_until(n, lambda: False, limit=0.05)
    say({"published": [size for _, size in msgs]})
    sys.stdin.readline()  # the late joiner reads the history meanwhile
    n.destroy_node()
    rclpy.shutdown()


def role_grow_sub(kind, count):
    """Every message of /grow, in order: (frame_id, size, content ok)."""
    rclpy.init()
    n = Node("grow_sub")
    cls = type(next(_grow_msgs(kind))[0])
    got = []

    def cb(m):
        size = _grow_size(kind, m)
        i = int(m.data.split(":")[0] if kind == "text" else m.header.frame_id)
        if kind == "text":
            ok = m.data == f"{i}:" + chr(97 + i) * size
        elif kind == "path":
            ok = all(ps.pose.position.x == float(k) for k, ps in enumerate(m.poses))
        else:
            ok = bytes(m.data) == bytes([i + 1]) * size
        got.append([i, size, ok])

    n.create_subscription(cls, "/grow", cb, GROW_QOS)
    say("ready")
    spin_until(n, lambda: len(got) >= int(count), limit=60.0)
    say({"got": got})
    n.destroy_node()
    rclpy.shutdown()


def role_life(topic="life"):
    """An anonymous-name node (its seven parameter services come with it)
    with a publisher, a subscription and a service; says ready, then ends
    normally at end of stdin, unless killed first."""
    from rcl_interfaces.srv import ListParameters
    from std_msgs.msg import String

    rclpy.init()
    node = Node(f"anon_{os.getpid()}_{time.monotonic_ns() % 1000000}")
    pub = node.create_publisher(String, topic, 10)
    node.create_subscription(String, topic, lambda m: None, 10)
    node.create_service(ListParameters, "life_list", lambda q, r: r)
    pub.publish(String(data="alive"))
    say("ready")
    sys.stdin.read()
    node.destroy_node()
    rclpy.shutdown()
    say({"ok": True})


if __name__ == "__main__":
    globals()["role_" + sys.argv[1]](*sys.argv[2:])
