"""nerve.gpu: the overwrite-safe copy protocol, driven on the host path
(numpy copiers that force a writer to overwrite the view during the copy),
the registration plan with a stand-in CUDA runtime, and, where cupy and a
CUDA device are present, the real device round trip (skipped with the
reason otherwise)."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

import nerve
import nerve.gpu as gpu

MSG = 1000  # five of these overwrite the 4096-byte data ring


def payload(k: int, n: int = MSG) -> np.ndarray:
    return ((np.arange(n) * 7 + k * 13) % 256).astype(np.uint8)


@pytest.fixture
def pair(name):
    n = name("gpu")
    with nerve.create(n, slots=16, size=4096) as w, nerve.open(n) as r:
        yield w, r


def overwrite_all(w: nerve.Channel, first: int) -> None:
    for i in range(5):
        w.put(payload(first + i))


def test_put_from_and_copy_view_round_trip(pair):
    w, r = pair
    frame = payload(3).reshape(10, 100)
    assert gpu.put_from(w, frame) == 1
    out = np.zeros((10, 100), np.uint8)
    got = gpu.copy_view(r, out)
    assert got is not None and got.seq == 1 and got.size == MSG and got.discarded == 0
    assert got.data is out
    assert np.array_equal(out, frame)
    assert gpu.copy_view(r, out) is None  # nothing new
    with pytest.raises(nerve.Timeout):
        gpu.copy_view(r, out, wait=True, timeout=0.005)


def test_copy_overwritten_after_it_is_discarded_and_retried(pair):
    w, r = pair
    w.put(payload(1))
    out = np.zeros(MSG, np.uint8)
    calls = []

    def copier(dst, src):
        np.copyto(dst, src)
        if not calls:
            overwrite_all(w, 100)  # seqs 2..6: seq 1 is gone
        calls.append(1)

    got = gpu.copy_view(r, out, copier)
    assert len(calls) == 2 and got.discarded == 1
    assert got.seq > 1, "the overwritten message was delivered"
    assert np.array_equal(out, payload(100 + got.seq - 2))
    assert got.missed == got.seq - 1


def test_torn_copy_is_never_delivered(pair):
    w, r = pair
    w.put(payload(1))
    out = np.zeros(MSG, np.uint8)
    first = []

    def copier(dst, src):
        if not first:
            overwrite_all(w, 200)  # the view's bytes change under the copy
            np.copyto(dst, src)
            first.append(dst.copy())
        else:
            np.copyto(dst, src)

    got = gpu.copy_view(r, out, copier)
    assert got.discarded == 1
    assert not np.array_equal(first[0], payload(1)), "the forced overwrite changed nothing"
    assert np.array_equal(out, payload(200 + got.seq - 2))


def test_every_attempt_overwritten_raises_lapped_and_consumes_nothing(pair):
    w, r = pair
    w.put(payload(1))
    out = np.zeros(MSG, np.uint8)
    k = [300]
    calls = []

    def copier(dst, src):
        calls.append(1)
        np.copyto(dst, src)
        overwrite_all(w, k[0])
        k[0] += 5

    with pytest.raises(nerve.Lapped):
        gpu.copy_view(r, out, copier, attempts=3)
    assert len(calls) == 3 and r.cursor == 0
    got = gpu.copy_view(r, out)
    assert got is not None and got.missed > 0


def test_newest_retry_delivers_the_new_newest(pair):
    w, r = pair
    w.put(payload(1))
    w.put(payload(2))
    out = np.zeros(MSG, np.uint8)
    calls = []

    def copier(dst, src):
        np.copyto(dst, src)
        if not calls:
            overwrite_all(w, 400)  # seqs 3..7
        calls.append(1)

    got = gpu.copy_view(r, out, copier, newest=True)
    assert got.seq == 7 and got.discarded == 1
    assert np.array_equal(out, payload(404))


def test_small_destination_and_failing_copier_consume_nothing(pair):
    w, r = pair
    w.put(payload(1))
    with pytest.raises(nerve.MessageTooLarge):
        gpu.copy_view(r, np.zeros(MSG - 1, np.uint8))
    assert r.cursor == 0

    def broken(dst, src):
        raise RuntimeError("device copy failed")

    with pytest.raises(RuntimeError, match="device copy failed"):
        gpu.copy_view(r, np.zeros(MSG, np.uint8), broken)
    assert r.cursor == 0
    out = np.zeros(2 * MSG, np.uint8)  # larger: data is the first bytes
    got = gpu.copy_view(r, out)
    assert got.seq == 1 and got.data.shape == (MSG,) and np.array_equal(got.data, payload(1))
    with pytest.raises(ValueError, match="contiguous"):
        gpu.copy_view(r, np.zeros((MSG, 2), np.uint8)[:, 0])


def test_put_from_failing_copier_publishes_nothing(pair):
    w, r = pair

    def broken(dst, src):
        raise RuntimeError("device copy failed")

    with pytest.raises(RuntimeError):
        gpu.put_from(w, payload(1), broken)
    assert w.stat().head_seq == 0
    assert w.put(payload(2), timeout=0) == 1  # the writer lock was released
    with pytest.raises(nerve.ReadOnly):
        gpu.put_from(r, payload(1))


def test_plan_registration_table():
    assert gpu.plan_registration(True, True, False, False) == "writable"
    assert gpu.plan_registration(False, True, True, False) == "read-only"
    assert gpu.plan_registration(False, True, False, True) == "host-page-tables"
    assert gpu.plan_registration(False, True, False, False) is None
    assert gpu.plan_registration(True, False, True, True) is None


class FakeRuntime:
    """Stands in for cupy.cuda.runtime: attributes by number, records
    hostRegister / hostUnregister calls, can refuse registration."""

    def __init__(self, attrs, refuse=False):
        self.attrs = attrs
        self.refuse = refuse
        self.calls = []

    def getDevice(self):
        return 0

    def deviceGetAttribute(self, attr, dev):
        if attr not in self.attrs:
            raise RuntimeError("cudaErrorInvalidValue")
        return self.attrs[attr]

    def hostRegister(self, ptr, size, flags):
        if self.refuse:
            raise RuntimeError("cudaErrorNotSupported")
        self.calls.append(("register", ptr, size, flags))

    def hostUnregister(self, ptr):
        self.calls.append(("unregister", ptr))


def test_register_follows_access_and_device(pair):
    w, r = pair
    base_r, len_r = r.ring()
    ro = FakeRuntime({99: 1, 100: 0, 113: 1})
    with gpu.register(r, runtime=ro) as reg:
        assert reg.mode == "read-only" and reg.registered
    assert ro.calls == [("register", base_r, len_r, 0x08), ("unregister", base_r)]

    rw = FakeRuntime({99: 1, 100: 0, 113: 1})
    with gpu.register(w, runtime=rw) as reg:
        assert reg.mode == "writable"
    assert rw.calls[0][3] == 0x00

    old = FakeRuntime({99: 1, 100: 0})  # a driver without attribute 113
    reg = gpu.register(r, runtime=old)
    assert reg.mode is None and "read-only" in reg.reason and old.calls == []
    reg.close()  # nothing to unregister

    refused = FakeRuntime({99: 1, 113: 1}, refuse=True)
    reg = gpu.register(r, runtime=refused)
    assert reg.mode is None and "cudaErrorNotSupported" in reg.reason


class FakeDeviceArray(np.ndarray):
    """Host memory posing as a cupy array: ``.data.ptr`` is its address."""

    @property
    def data(self):  # type: ignore[override]
        return types.SimpleNamespace(ptr=self.ctypes.data)


def test_device_helpers_pass_the_right_pointers_and_kinds(pair, monkeypatch):
    # A stand-in cupy whose memcpyAsync is a host memmove: checks which
    # pointer is the device side in each direction and that the stream is
    # synchronized before the view is checked.
    w, r = pair
    log = []

    def memcpy_async(dst, src, n, kind, stream):
        log.append(("copy", kind, stream))
        ctypes.memmove(dst, src, n)

    stream = types.SimpleNamespace(ptr=0, synchronize=lambda: log.append(("sync",)))
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(memcpyAsync=memcpy_async),
        get_current_stream=lambda: stream,
    )
    fake.empty = lambda shape, dtype: np.zeros(shape, dtype).view(FakeDeviceArray)
    monkeypatch.setitem(sys.modules, "cupy", fake)

    src = payload(5).reshape(10, 100).view(FakeDeviceArray)
    assert gpu.put_from_device(w, src) == 1
    assert log == [("copy", 2, 0), ("sync",)]  # device -> host, then sync
    log.clear()
    got = gpu.copy_view_to_device(r)  # allocates the largest message
    assert log == [("copy", 1, 0), ("sync",)]  # host -> device, then sync
    assert got.seq == 1 and got.size == MSG
    assert isinstance(got.data, FakeDeviceArray) and np.array_equal(got.data, payload(5))
    w.put(payload(6))
    out = np.zeros((10, 100), np.uint8).view(FakeDeviceArray)
    got = gpu.copy_view_to_device(r, out)
    assert got.data is out and np.array_equal(out.reshape(-1), payload(6))


def _cupy_or_skip():
    try:
        import cupy as cp
    except ImportError as e:
        pytest.skip(f"cupy cannot be imported ({e}; pip install 'nerve[gpu]'): device copies not tested")
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, or a driver too old for this cupy
        pytest.skip(f"no usable CUDA device: {e}")
    if n < 1:
        pytest.skip("no CUDA device")
    return cp


def test_device_round_trip_through_registered_rings(name):
    cp = _cupy_or_skip()
    n = name("gpudev")
    shape = (108, 192, 3)
    with nerve.create(n, slots=8, size=1 << 20) as w, nerve.open(n) as r:
        with gpu.register(w) as rw, gpu.register(r) as rr:
            print(f"writer ring: {rw!r}; reader ring: {rr!r}")
            src = (cp.arange(np.prod(shape), dtype=cp.uint32) % 251).astype(cp.uint8).reshape(shape)
            assert gpu.put_from_device(w, src) == 1
            dst = cp.zeros(shape, cp.uint8)
            got = gpu.copy_view_to_device(r, dst)
            assert got.seq == 1 and got.data is dst
            assert bool((dst == src).all())
