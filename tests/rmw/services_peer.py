"""The ROS 2 nodes of test_rmw_services.py: python services_peer.py ROLE TAG.

server   (on rmw_nerve, under nerve-ros2-exec) node svc_server with the
         parameter "gain" = 1.5, a publisher of /TAG/status (one message,
         which makes its channel), a subscription to /TAG/cmd and the
         service /TAG/double
         (test_msgs/srv/BasicTypes: int64 doubled, "!" appended to the
         string; a request whose string is "hang" is never answered).
client   (on DDS) CLIENTS clients of /TAG/double, CALLS calls each, all in
         flight at once; then (unless VIEW is "bare") SetParameters gain =
         2.5 on svc_server and GetParameters back through the bridge; then,
         unless VIEW is "noview" or "bare"
         (a client on rmw_nerve, whose server's topics are not bridged), with
         a publisher of /TAG/cmd, the DDS graph's view of svc_server (its
         topics and services by node).
hang     (on DDS) one call that the server never answers; says "sent", then
         waits for the service to disappear.
action   (on DDS) an action client of /fib (test_msgs/action/Fibonacci,
         served by nodes.py action_server): a first goal (says "first"),
         then, once the file $NERVE_PEER_GO exists, a goal of order 8 to its
         result with feedback and a goal of order 40 cancelled midway.

Each role prints "ready" (or "sent") when the test may go on and one line
of JSON at the end. Every wait is bounded."""

import json
import sys
import time

import rclpy
from rclpy.node import Node


def say(obj):
    print(obj if isinstance(obj, str) else json.dumps(obj), flush=True)


def spin_until(node, cond, limit):
    end = time.monotonic() + limit
    while not cond() and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    return cond()


def role_server(tag):
    from std_msgs.msg import String
    from test_msgs.srv import BasicTypes

    n = Node("svc_server", enable_rosout=False)
    n.declare_parameter("gain", 1.5)
    n.create_publisher(String, f"/{tag}/status", 10).publish(String(data="up"))
    n.create_subscription(String, f"/{tag}/cmd", lambda m: None, 10)

    def double(req, rep):
        if req.string_value == "hang":
            time.sleep(3600)
        rep.int64_value = 2 * req.int64_value
        rep.string_value = req.string_value + "!"
        return rep

    n.create_service(BasicTypes, f"/{tag}/double", double)
    say("ready")
    end = time.monotonic() + 300
    while time.monotonic() < end:
        rclpy.spin_once(n, timeout_sec=0.1)


def role_client(tag, clients, calls, view="view"):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, SetParameters
    from test_msgs.srv import BasicTypes

    n = Node(f"svc_client_{tag}", start_parameter_services=False, enable_rosout=False)
    cls = [n.create_client(BasicTypes, f"/{tag}/double") for _ in range(int(clients))]
    ready = spin_until(n, lambda: all(c.service_is_ready() for c in cls), 90)
    say("ready")
    futs = []
    for k in range(int(calls)):
        for i, c in enumerate(cls):
            v = 1000 * i + k
            futs.append((v, f"c{i}-{k}", c.call_async(BasicTypes.Request(int64_value=v,
                                                                         string_value=f"c{i}-{k}"))))
    spin_until(n, lambda: all(f.done() for _, _, f in futs), 60)
    wrong = [(v, s, f.result().int64_value, f.result().string_value)
             for v, s, f in futs if f.done() and (f.result().int64_value != 2 * v
                                                 or f.result().string_value != s + "!")]
    out = {"ready": ready, "calls": len(futs), "done": sum(f.done() for _, _, f in futs),
           "wrong": wrong[:5]}
    if view == "bare":  # the calls only: a server without parameters
        say(out)
        return

    def call(srv, name, req):
        c = n.create_client(srv, name)
        if not spin_until(n, c.service_is_ready, 60):
            return None
        f = c.call_async(req)
        spin_until(n, f.done, 30)
        return f.result() if f.done() else None

    v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=2.5)
    r = call(SetParameters, "/svc_server/set_parameters",
             SetParameters.Request(parameters=[Parameter(name="gain", value=v)]))
    out["set"] = bool(r and r.results and r.results[0].successful)
    r = call(GetParameters, "/svc_server/get_parameters", GetParameters.Request(names=["gain"]))
    out["get"] = r.values[0].double_value if r and r.values else None
    if view == "noview":
        say(out)
        return
    from std_msgs.msg import String

    # The bridge makes its reader of /TAG/cmd (--from-ros) once it sees a
    # DDS publisher of it.
    n.create_publisher(String, f"/{tag}/cmd", 10)
    out.update(node_view(n, "svc_server", f"/{tag}/status", f"/{tag}/cmd"))
    say(out)


def node_view(n, node, pub, sub):
    """The DDS graph's view of rmw_nerve's node `node` (in "/") once it
    lists `pub` among the node's publishers (bridged by --to-ros) and `sub`
    among its subscriptions (--from-ros), or the bounded wait ends: node
    list, publishers, subscriptions and services by node."""
    def by_node(get):
        try:
            return sorted(name for name, _ in get(node, "/"))
        except Exception as e:  # rclpy's NodeNameNonExistentError: not (yet) listed
            return [type(e).__name__]

    spin_until(n, lambda: pub in by_node(n.get_publisher_names_and_types_by_node)
               and sub in by_node(n.get_subscriber_names_and_types_by_node), 60)
    return {"nodes": sorted(f"{ns.rstrip('/')}/{name}"
                            for name, ns in n.get_node_names_and_namespaces()),
            "pubs": by_node(n.get_publisher_names_and_types_by_node),
            "subs": by_node(n.get_subscriber_names_and_types_by_node),
            "srvs": by_node(n.get_service_names_and_types_by_node)}


def request_hash():
    """The REP 2011 hash of test_msgs/srv/BasicTypes_Request as rclpy's
    type support gives it (get_type_hash_func of the C struct
    rosidl_message_type_support_t), "RIHS01_<hex>"."""
    import ctypes

    from rclpy.type_support import check_for_type_support
    from test_msgs.srv import BasicTypes

    check_for_type_support(BasicTypes.Request)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    ts = get(BasicTypes.Request._TYPE_SUPPORT, None)
    # {identifier, data, func, get_type_hash_func, ...}: the fourth pointer.
    fn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(
        ctypes.cast(ts, ctypes.POINTER(ctypes.c_void_p))[3])
    h = ctypes.string_at(fn(ts), 33)  # rosidl_type_hash_t {uint8 version; uint8 value[32]}
    assert h[0] == 1, h[0]
    return "RIHS01_" + h[1:].hex()


def role_hang(tag):
    from test_msgs.srv import BasicTypes

    n = Node(f"svc_hang_{tag}", start_parameter_services=False, enable_rosout=False)
    c = n.create_client(BasicTypes, f"/{tag}/double")
    ready = spin_until(n, c.service_is_ready, 90)
    f = c.call_async(BasicTypes.Request(string_value="hang"))
    say("sent")
    gone = spin_until(n, lambda: not c.service_is_ready(), 60)
    say({"ready": ready, "gone": gone, "answered": f.done()})


def role_action(tag):
    import os

    from rclpy.action import ActionClient
    from test_msgs.action import Fibonacci

    n = Node(f"fib_client_{tag}", start_parameter_services=False, enable_rosout=False)
    c = ActionClient(n, Fibonacci, "/fib")
    # Until the server's first goal its feedback and status channels do not
    # exist (rmw_nerve makes a topic's channel at its first publish), so the
    # bridge has no writers of them and wait_for_server() cannot be true:
    # the first goal goes once the three services are there.
    probes = [n.create_client(t, f"/fib/_action/{s}") for t, s in (
        (Fibonacci.Impl.SendGoalService, "send_goal"),
        (Fibonacci.Impl.CancelGoalService, "cancel_goal"),
        (Fibonacci.Impl.GetResultService, "get_result"))]
    out = {"services": spin_until(n, lambda: all(p.service_is_ready() for p in probes), 90)}
    say("ready")

    def run(order, feedback=None):
        """A goal to its result: (result, status, handle), None on a bound."""
        cb = (lambda f: feedback.append(list(f.feedback.sequence))) if feedback is not None \
            else None
        for _ in range(3):  # a request sent before its writer matched is lost
            send = c.send_goal_async(Fibonacci.Goal(order=order), feedback_callback=cb)
            if spin_until(n, send.done, 20):
                break
        if not send.done() or not send.result().accepted:
            return None
        res = send.result().get_result_async()
        if not spin_until(n, res.done, 30):
            return None
        return list(res.result().result.sequence), res.result().status

    out["first"] = run(3) is not None
    say("first")
    go = os.environ["NERVE_PEER_GO"]
    spin_until(n, lambda: os.path.exists(go), 90)
    out["server"] = c.wait_for_server(timeout_sec=30.0)
    feedback = []
    r = run(8, feedback)
    out["result"], out["status"] = r if r else (None, None)
    out["feedback"] = feedback
    send2 = c.send_goal_async(Fibonacci.Goal(order=40))
    spin_until(n, send2.done, 30)
    h2 = send2.result()
    spin_until(n, lambda: False, limit=0.3)
    cancel = h2.cancel_goal_async()
    spin_until(n, cancel.done, 30)
    out["cancel_goals"] = len(cancel.result().goals_canceling) if cancel.done() else None
    res2 = h2.get_result_async()
    spin_until(n, res2.done, 30)
    out["cancel_status"] = res2.result().status if res2.done() else None
    say(out)


if __name__ == "__main__":
    rclpy.init()
    {"server": role_server, "client": role_client, "hang": role_hang,
     "action": role_action}[sys.argv[1]](*sys.argv[2:])
