// nerve._nerve, MCAP: a channel's messages copied out as MCAP Message
// records, for the dump of `nerve blackbox` (python-tools/src/nerve_tools/
// recording/blackbox.py, whose file writer is recording/mcap_fast.py).
//
// A dump copies every message of a channel in a time window, oldest first,
// and writes each as one Message record of the file's open chunk. Done in
// Python that cost about 2 us a message (a Message tuple, a bytes object,
// a struct.pack, list appends); here it is one library read straight into
// the records buffer (nerve_chan_get: a copy validated against the writers
// as every reader's, retried by the library when a writer overwrote the
// message during the copy) and 31 bytes of header, with the GIL released.
//
// Counting: the reads are NEXT reads from a cursor set just before the first
// sequence number asked for, so a message overwritten before it could be
// copied is skipped with the library's exact "missed" count (chan.h), the
// count every reader reports. What the library found but could not copy
// whole (a torn read) it reads again or counts, never delivers.
#include "_nerve.h"

#include <nanobind/stl/string.h>

#include <cerrno>
#include <new>
#include <utility>
#include <unistd.h>
#include <vector>

namespace nerve_py {

using namespace nb::literals;

namespace {

// An MCAP Message record (https://mcap.dev/spec#message-op0x05): opcode,
// record length (u64), channel id (u16), sequence (u32), log time and
// publish time (u64), then the payload; little-endian.
constexpr uint8_t OP_MESSAGE = 0x05;
constexpr size_t RECORD_HEAD = 1 + 8 + 2 + 4 + 8 + 8;
constexpr uint64_t RECORD_FIXED = RECORD_HEAD - 9; // of the record length

void put_le(char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = static_cast<char>(v >> (8 * i));
    }
}

// A Message record's header at rec: log and publish time t, a payload of
// len bytes.
void record_head(char *rec, uint16_t cid, uint64_t seq, uint64_t t,
                 uint64_t len)
{
    rec[0] = static_cast<char>(OP_MESSAGE);
    put_le(rec + 1, RECORD_FIXED + len, 8);
    put_le(rec + 9, cid, 2);
    put_le(rec + 11, seq & 0xFFFFFFFFu, 4);
    put_le(rec + 15, t, 8);
    put_le(rec + 23, t, 8);
}

// Why a call stopped: nothing newer yet; a message past end_ns; max_bytes
// reached; a read error after records were copied.
enum class Stop { caught_up, end, full, error };

// The first records buffer's largest size; it grows (doubling) past that.
constexpr uint64_t FIRST_CAP_MAX = uint64_t(64) << 20;

const char *stop_name(Stop s)
{
    switch (s) {
    case Stop::caught_up: return "caught_up";
    case Stop::end: return "end";
    case Stop::full: return "full";
    case Stop::error: return "error";
    }
    return "?";
}

// What one call copied (the Python object McapRun).
struct McapRun {
    nb::bytes data;    // the records, back to back (mcap_messages only)
    uint64_t size = 0; // bytes of records (written to the file, or in data)
    nb::bytes index;   // (log time, offset in chunk) pairs, native u64
    uint64_t count = 0;
    uint64_t missed = 0;
    int64_t first_ns = 0; // commit times of the first and last record
    int64_t last_ns = 0;
    uint64_t next_seq = 0;
    std::string stop;
};

// What a copy loop took so far, and why it stopped: the part both copies
// (into a buffer, into a file) share.
struct Tally {
    uint64_t used = 0; // bytes of records
    std::vector<uint64_t> index;
    uint64_t count = 0, missed = 0, last_seq = 0, last_len = 0, next_seq = 0;
    int64_t first_ns = 0, last_ns = 0;
    int rc = 0;
    Stop stop = Stop::caught_up;

    // Room in the index for one more record; false (rc NERVE_ENOMEM,
    // nothing counted: the next call reads this message again) when there
    // is none. Without the GIL nothing may throw past here.
    bool index_room()
    {
        try {
            if (index.size() + 2 > index.capacity()) {
                index.reserve(2 * index.capacity() + 2);
            }
        } catch (const std::bad_alloc &) {
            rc = NERVE_ENOMEM;
            return false;
        }
        return true;
    }

    // A record of info's message, log time t, at offset `at` of the chunk.
    void took(uint64_t t, uint64_t at, const struct nerve_get_info &info)
    {
        index.push_back(t);
        index.push_back(at);
        used += RECORD_HEAD + info.len;
        if (!count) {
            first_ns = info.time_ns;
        }
        count++;
        last_ns = info.time_ns;
        last_seq = info.seq;
        last_len = info.len;
    }
};

// The copy loop's state, shared by its passes (a pass ends when the records
// buffer must grow, which needs the GIL).
struct Copy : Tally {
    // in
    uint16_t cid;
    int64_t end_ns;
    uint64_t offset;
    uint64_t chunk_offset;
    uint64_t max_bytes;
    bool count_first;
    // out
    uint64_t need = 0; // > 0: the pass stopped for a buffer of this size

    // One pass into buf[0, cap) without the GIL. Thread: the caller's,
    // with the handle marked busy.  Blocking: no (reads that do not wait).
    void pass(nerve_chan *c, char *buf, uint64_t cap)
    {
        need = 0;
        for (;;) {
            if (used >= max_bytes) {
                stop = Stop::full;
                return;
            }
            if (cap - used < RECORD_HEAD) {
                need = used + RECORD_HEAD + last_len;
                return;
            }
            struct nerve_get_info info;
            char *rec = buf + used;
            const uint64_t room = cap - used - RECORD_HEAD;
            int r = nerve_chan_get(c, rec + RECORD_HEAD, size_t(room), 0, 0,
                                   &info, NERVE_GET_NEXT);
            if (r == NERVE_EMSGSIZE) { // nothing consumed: grow, read again
                need = used + RECORD_HEAD + info.len;
                return;
            }
            if (r == NERVE_EAGAIN) {
                stop = Stop::caught_up;
                return;
            }
            if (r != 0) {
                rc = r;
                return;
            }
            if (!index_room()) {
                return;
            }
            // Before the first record of a dump that did not find its
            // window's start, the library's count is of messages the ring
            // no longer held when the dump began: the achieved window says
            // that, not the missed count.
            if (count_first || count) {
                missed += info.missed;
            }
            if (info.time_ns > end_ns) { // read, not written: the window
                next_seq = info.seq;     // ends before it
                stop = Stop::end;
                return;
            }
            const uint64_t t = uint64_t(info.time_ns) + offset;
            record_head(rec, cid, info.seq, t, info.len);
            took(t, chunk_offset + used, info);
        }
    }
};

// All of n bytes to fd at its position: 0 or -errno.
int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k < 0) {
            return -errno;
        }
        p += k;
        n -= size_t(k);
    }
    return 0;
}

// The copy loop of mcap_messages_to_file: records written straight to a
// file at its position, which starts at the chunk's records (`base`). Each
// record's header by write(), its payload by nerve_chan_view_write(): the
// kernel copies it from the channel file, so nothing is copied here and no
// page of the ring is touched (a handle opened lazily stays unfaulted). A
// message a writer overwrote while it was written, and a record a write
// error cut short, are taken back: the file position returns to the
// record's start. The overwritten message was NEXT's, so the library's
// count will never include it: it is counted here. Runs without the GIL.
struct FileCopy : Tally {
    // in
    uint16_t cid;
    int64_t end_ns;
    uint64_t offset;
    uint64_t max_bytes;
    bool count_first;
    int fd;
    off_t base;
    // out
    bool file_error = false; // rc is -errno of the file's write

    void rewind()
    {
        if (lseek(fd, base + off_t(used), SEEK_SET) < 0 && rc == 0) {
            rc = -errno;
            file_error = true;
        }
    }

    void run(nerve_chan *c)
    {
        for (;;) {
            if (used >= max_bytes) {
                stop = Stop::full;
                return;
            }
            struct nerve_view v;
            int r = nerve_chan_view(c, 0, 0, &v, NERVE_GET_NEXT);
            if (r == NERVE_EAGAIN) {
                stop = Stop::caught_up;
                return;
            }
            if (r != 0) {
                rc = r;
                return;
            }
            const bool counting = count_first || count;
            if (counting) {
                missed += v.info.missed;
            }
            if (v.info.time_ns > end_ns) {
                next_seq = v.info.seq;
                stop = Stop::end;
                return;
            }
            if (!index_room()) {
                return;
            }
            const uint64_t t = uint64_t(v.info.time_ns) + offset;
            char head[RECORD_HEAD];
            record_head(head, cid, v.info.seq, t, v.info.len);
            r = write_all(fd, head, RECORD_HEAD);
            if (r == 0) {
                r = nerve_chan_view_write(c, &v, fd);
            }
            if (r == NERVE_ESTALE) {
                missed += counting ? 1 : 0;
                rewind();
                if (rc != 0) {
                    return;
                }
                continue;
            }
            if (r != 0) {
                rc = r; // not counted: the next call reads it again
                file_error = r != NERVE_EINVAL && r != NERVE_ECORRUPT;
                rewind();
                return;
            }
            took(t, used, v.info);
        }
    }
};

// A call's result from what its loop took: an error met before any record
// is raised; one met after records were copied ends the call ("error"),
// the records are returned and the next call (from next_seq) meets the
// error again, so nothing copied is lost.
McapRun finish(Tally &t, Chan &ch, int64_t seq, nb::bytes data)
{
    if (t.rc != 0 && t.count == 0) {
        raise_nerve(t.rc, ch.name.c_str());
    }
    if (t.rc != 0) {
        t.stop = Stop::error;
    }
    if (t.stop != Stop::end) {
        t.next_seq = t.count ? t.last_seq + 1 : uint64_t(seq);
    }
    McapRun out;
    out.data = std::move(data);
    out.size = t.used;
    out.index = nb::bytes(t.index.data(), t.index.size() * sizeof(uint64_t));
    out.count = t.count;
    out.missed = t.missed;
    out.first_ns = t.first_ns;
    out.last_ns = t.last_ns;
    out.next_seq = t.next_seq;
    out.stop = stop_name(t.stop);
    return out;
}

void check_mcap_args(int64_t channel_id, int64_t seq, int64_t time_offset,
                     int64_t chunk_offset, int64_t max_bytes)
{
    if (channel_id < 0 || channel_id > 0xFFFF) {
        throw nb::value_error("channel_id must be an MCAP channel id, "
                              "0 to 65535");
    }
    if (seq < 1) {
        throw nb::value_error("seq must be a sequence number, >= 1");
    }
    if (time_offset < 0) {
        throw nb::value_error("time_offset must be >= 0 (ns added to "
                              "commit times)");
    }
    if (chunk_offset < 0) {
        throw nb::value_error("chunk_offset must be >= 0");
    }
    if (max_bytes < 1) {
        throw nb::value_error("max_bytes must be >= 1");
    }
}

// The first buffer: what is in the ring now at the size of the last
// message this handle read, up to max_bytes and one more message.
uint64_t first_cap(nerve_chan *c, uint64_t seq, uint64_t hint,
                   uint64_t max_bytes)
{
    uint64_t tail = 0, head = 0;
    const uint64_t per = RECORD_HEAD + hint;
    uint64_t cap = max_bytes + per;
    if (nerve_chan_seq_range(c, &tail, &head) == 0) {
        const uint64_t from = seq > tail ? seq : tail;
        const uint64_t n = head >= from ? head - from + 1 : 1;
        if (n <= cap / per) {
            cap = n * per;
        }
    }
    return cap > FIRST_CAP_MAX ? FIRST_CAP_MAX : cap;
}

McapRun mcap_messages(Chan &ch, int64_t channel_id, int64_t seq, int64_t end_ns,
                      int64_t time_offset, int64_t chunk_offset,
                      int64_t max_bytes, bool count_first_missed)
{
    check_mcap_args(channel_id, seq, time_offset, chunk_offset, max_bytes);
    nerve_chan *c = ch.use();
    Copy cp{{},
            uint16_t(channel_id),
            end_ns,
            uint64_t(time_offset),
            uint64_t(chunk_offset),
            uint64_t(max_bytes),
            count_first_missed};
    const uint64_t per = RECORD_HEAD + ch.hint;
    uint64_t cap = first_cap(c, uint64_t(seq), ch.hint, cp.max_bytes);
    cp.last_len = ch.hint;
    PyObject *buf = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(cap));
    if (!buf) {
        throw nb::python_error();
    }
    nb::object keep = nb::steal(buf);
    cp.index.reserve(size_t(2 * (cap / per + 1)));
    nerve_chan_seek(c, uint64_t(seq) - 1);
    {
        WaitGuard guard({&ch});
        for (;;) {
            char *p = PyBytes_AS_STRING(buf);
            PyThreadState *ts = PyEval_SaveThread();
            cp.pass(c, p, cap);
            reacquire_gil(ts);
            if (!cp.need) {
                break;
            }
            cap = cp.need > 2 * cap ? cp.need : 2 * cap;
            PyObject *grown = keep.release().ptr();
            if (_PyBytes_Resize(&grown, Py_ssize_t(cap)) < 0) {
                throw nb::python_error();
            }
            keep = nb::steal(grown);
            buf = grown;
        }
    }
    if (cp.count) {
        // As a get's: the last message's size.
        ch.hint = cp.last_len > MIN_HINT ? size_t(cp.last_len) : MIN_HINT;
    }
    if (cp.rc != 0 && cp.count == 0) {
        return finish(cp, ch, seq, nb::bytes("", 0)); // raises
    }
    PyObject *data = keep.release().ptr();
    if (uint64_t(PyBytes_GET_SIZE(data)) != cp.used &&
        _PyBytes_Resize(&data, Py_ssize_t(cp.used)) < 0) {
        throw nb::python_error();
    }
    return finish(cp, ch, seq, nb::steal<nb::bytes>(data));
}

McapRun mcap_messages_to_file(Chan &ch, int fd, int64_t channel_id, int64_t seq,
                              int64_t end_ns, int64_t time_offset,
                              int64_t max_bytes, bool count_first_missed)
{
    check_mcap_args(channel_id, seq, time_offset, 0, max_bytes);
    nerve_chan *c = ch.use();
    const off_t base = lseek(fd, 0, SEEK_CUR);
    if (base < 0) {
        raise_nerve(-errno, ch.name.c_str(), "the file to write to");
    }
    FileCopy cp{{},
                uint16_t(channel_id),
                end_ns,
                uint64_t(time_offset),
                uint64_t(max_bytes),
                count_first_missed,
                fd,
                base};
    nerve_chan_seek(c, uint64_t(seq) - 1);
    {
        WaitGuard guard({&ch});
        nb::gil_scoped_release unlocked;
        cp.run(c);
    }
    if (cp.rc != 0 && cp.count == 0 && cp.file_error) {
        errno = -cp.rc; // as any failed write of a Python file
        PyErr_SetFromErrno(PyExc_OSError);
        throw nb::python_error();
    }
    return finish(cp, ch, seq, nb::bytes("", 0));
}

} // namespace

void bind_mcap(nb::module_ &m)
{
    nb::class_<McapRun>(m, "McapRun",
                        "What one mcap_messages() call copied (read-only).")
        .def_ro("data", &McapRun::data)
        .def_ro("size", &McapRun::size)
        .def_ro("index", &McapRun::index)
        .def_ro("count", &McapRun::count)
        .def_ro("missed", &McapRun::missed)
        .def_ro("first_ns", &McapRun::first_ns)
        .def_ro("last_ns", &McapRun::last_ns)
        .def_ro("next_seq", &McapRun::next_seq)
        .def_ro("stop", &McapRun::stop);
    m.def("mcap_messages", &mcap_messages, "chan"_a, "channel_id"_a, "seq"_a,
          "end_ns"_a, nb::kw_only(), "time_offset"_a = 0, "chunk_offset"_a = 0,
          "max_bytes"_a = int64_t(1) << 20, "count_first_missed"_a = true);
    m.def("mcap_messages_to_file", &mcap_messages_to_file, "chan"_a, "fd"_a,
          "channel_id"_a, "seq"_a, "end_ns"_a, nb::kw_only(),
          "time_offset"_a = 0, "max_bytes"_a = int64_t(1) << 20,
          "count_first_missed"_a = true);
}

} // namespace nerve_py
