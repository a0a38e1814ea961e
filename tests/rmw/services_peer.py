"""The ROS 2 nodes of test_rmw_services.py: python services_peer.py ROLE TAG.

server   (on rmw_nerve, under nerve-ros2-exec) node svc_server with the
         parameter "gain" = 1.5 and the service /TAG/double
         (test_msgs/srv/BasicTypes: int64 doubled, "!" appended to the
         string; a request whose string is "hang" is never answered).
client   (on DDS) CLIENTS clients of /TAG/double, CALLS calls each, all in
         flight at once; then SetParameters gain = 2.5 on svc_server and
         GetParameters back through the bridge.
hang     (on DDS) one call that the server never answers; says "sent", then
         waits for the service to disappear.

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
    from test_msgs.srv import BasicTypes

    n = Node("svc_server", enable_rosout=False)
    n.declare_parameter("gain", 1.5)

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


def role_client(tag, clients, calls):
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
    say(out)


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


if __name__ == "__main__":
    rclpy.init()
    {"server": role_server, "client": role_client, "hang": role_hang}[sys.argv[1]](*sys.argv[2:])
