"""numpy arrays of any dtype and shape round-trip; views are zero-copy."""

from __future__ import annotations

import numpy as np
import pytest

import nerve

POINT = np.dtype([("xyz", "<f4", (3,)), ("intensity", "<u2"), ("ring", "u1"), ("t", "<f8")])

CASES = {
    "image_1080p_rgb": (np.uint8, (1080, 1920, 3)),
    "depth_f32": (np.float32, (480, 640)),
    "f16": (np.float16, (7, 5)),
    "c128": (np.complex128, (4, 4)),
    "bool": (np.bool_, (33,)),
    "i64_3d": (np.int64, (2, 3, 4)),
    "u16_big_endian": (np.dtype(">u2"), (100,)),
    "scalar_0d": (np.float64, ()),
    "empty": (np.int32, (0, 5)),
    "pointcloud": (POINT, (10_000,)),
    "datetime": (np.dtype("datetime64[ns]"), (6,)),
}


def _sample(dtype, shape, seed=1):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    raw = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8)
    if dt.kind == "b":
        raw = raw % 2
    arr = raw.view(dt).reshape(shape)
    if dt.kind in "fc":
        arr = np.nan_to_num(arr)  # NaN != NaN would spoil the comparison
    return arr


@pytest.fixture(scope="module")
def big(request):
    import os

    n = f"nt-{os.getpid()}-np-big"
    ch = nerve.create(n, slots=8, size=8 << 20)
    yield ch
    ch.close()
    nerve.unlink(n)


@pytest.mark.parametrize("case", sorted(CASES))
def test_roundtrip_get(big, case):
    dtype, shape = CASES[case]
    a = _sample(dtype, shape)
    with nerve.open(big.name) as r:
        r.seek(big.stat().head_seq)
        big.put(a)
        m = r.get()
        b = m.array(a.dtype, a.shape)
        assert m.size == a.nbytes
        assert b.dtype == a.dtype and b.shape == a.shape
        assert b.tobytes() == a.tobytes()
        assert not b.flags.writeable


@pytest.mark.parametrize("case", ["image_1080p_rgb", "pointcloud", "c128"])
def test_roundtrip_view(big, case):
    dtype, shape = CASES[case]
    a = _sample(dtype, shape, seed=2)
    with nerve.open(big.name) as r:
        r.seek(big.stat().head_seq)
        big.put(a)
        with r.view() as m:
            b = m.array(a.dtype, a.shape)
            assert np.array_equal(b, a) if a.dtype.kind != "V" else b.tobytes() == a.tobytes()
            assert not b.flags.writeable
            assert b.base is not None  # shares memory, no copy
            checksum = int(b.view(np.uint8).sum(dtype=np.uint64))
        assert checksum == int(a.view(np.uint8).sum(dtype=np.uint64))


def test_view_is_zero_copy(name):
    """The array entered by view() is the ring itself: a writer that laps
    the reader changes what it sees, and the block then raises StaleView."""
    with nerve.create(name("zc"), slots=2, size=4096) as w, nerve.open(w.name) as r:
        w.put(np.full(1000, 1, np.uint8))
        with pytest.raises(nerve.StaleView):
            with r.view() as m:
                arr = m.array(np.uint8)
                assert arr[0] == 1
                for v in (2, 3, 4, 5):
                    w.put(np.full(1000, v, np.uint8))
                assert arr[0] != 1  # the bytes under the array changed


def test_non_contiguous_arrays(big):
    a = _sample(np.int32, (64, 48))
    with nerve.open(big.name) as r:
        r.seek(big.stat().head_seq)
        big.put(a.T)  # Fortran order: gathered in C order
        big.put(a[::2, ::3])
        assert np.array_equal(r.get().array(np.int32, (48, 64)), a.T)
        assert np.array_equal(r.get().array(np.int32, (32, 16)), a[::2, ::3])


def test_reserve_numpy(big):
    with nerve.open(big.name) as r:
        r.seek(big.stat().head_seq)
        res = big.reserve(dtype=np.uint8, shape=(1080, 1920, 3))
        with res as img:
            assert img.shape == (1080, 1920, 3) and img.flags.writeable
            img[...] = 7
            img[0, 0] = (1, 2, 3)
        assert not img.flags.writeable  # locked after the block
        m = r.get()
        assert m.seq == res.seq
        out = m.array(np.uint8, (1080, 1920, 3))
        assert tuple(out[0, 0]) == (1, 2, 3) and out[1:].min() == 7
        with big.reserve(dtype=POINT, shape=3) as pts:
            pts["xyz"] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
            pts["intensity"] = 9
        pc = r.get().array(POINT)
        assert pc["xyz"][2].tolist() == [7, 8, 9] and pc["intensity"].tolist() == [9, 9, 9]
    with pytest.raises(ValueError):
        big.reserve(10, dtype=np.uint8, shape=(5,))


def test_object_arrays_refused(big):
    with pytest.raises(TypeError):
        big.put(np.array([object()]))


def test_array_shape_mismatch(big):
    with nerve.open(big.name) as r:
        r.seek(big.stat().head_seq)
        big.put(np.zeros(10, np.uint8))
        m = r.get()
        with pytest.raises(ValueError):
            m.array(np.float64)  # 10 bytes is not a whole float64
        with pytest.raises(ValueError):
            m.array(np.uint8, (3, 3))
