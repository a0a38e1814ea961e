// nerve._nerve, the bridge kernel (include/nerve/bridge.h,
// docs/bridge-kernel.md): names, globs, the channel directory and the
// import budget and the own-sequence guard, as every bridge engine in
// Python calls them.
#include "_nerve.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nerve/bridge.h>

namespace nerve_py {

using namespace nb::literals;

namespace {

// Refuse a string with a NUL, which C would cut short silently.
const char *c_str(const std::string &s, const char *what)
{
    if (s.find('\0') != std::string::npos) {
        raise_nerve(NERVE_EINVAL, nullptr,
                    (std::string(what) + " holds a NUL").c_str());
    }
    return s.c_str();
}

std::string topic_of_channel(const std::string &name, uint32_t domain)
{
    char out[NERVE_TOPIC_MAX + 1];
    int rc = nerve_topic_of_channel(c_str(name, "a channel name"), domain, out,
                                    sizeof out);
    if (rc != 0) {
        raise_nerve(rc);
    }
    return out;
}

std::string channel_of_topic(const std::string &topic, uint32_t domain)
{
    char out[NERVE_NAME_MAX + 1];
    int rc = nerve_channel_of_topic(c_str(topic, "a topic"), domain, out,
                                    sizeof out);
    if (rc != 0) {
        raise_nerve(rc);
    }
    return out;
}

bool glob_match(const std::string &glob, const std::string &name)
{
    int rc = nerve_glob_match(c_str(glob, "a glob"), c_str(name, "a name"));
    if (rc < 0) {
        raise_nerve(rc);
    }
    return rc == 1;
}

// nerve.ChannelDir: a nerve_dir.
struct Dir {
    nerve_dir *d = nullptr;

    Dir(const std::vector<std::string> &globs, bool scan)
    {
        std::vector<const char *> g;
        for (const std::string &s : globs) {
            g.push_back(c_str(s, "a glob"));
        }
        int rc =
            nerve_dir_open(g.data(), g.size(), scan ? NERVE_DIR_SCAN : 0, &d);
        if (rc != 0) {
            raise_nerve(rc);
        }
    }
    ~Dir()
    {
        (void)nerve_dir_close(d);
    }
    Dir(const Dir &) = delete;
    Dir &operator=(const Dir &) = delete;

    nerve_dir *use() const
    {
        if (!d) {
            raise_nerve(NERVE_EBADF, nullptr, "the ChannelDir is closed");
        }
        return d;
    }

    // ("created" | "removed", name), or None when nothing is waiting.
    std::optional<std::pair<std::string, std::string>> next()
    {
        struct nerve_dir_event ev;
        int rc = nerve_dir_next(use(), &ev);
        if (rc == NERVE_EAGAIN) {
            return std::nullopt;
        }
        if (rc != 0) {
            raise_nerve(rc);
        }
        return std::make_pair(
            std::string(ev.kind == NERVE_DIR_CREATED ? "created" : "removed"),
            std::string(ev.name));
    }

    void close()
    {
        (void)nerve_dir_close(d);
        d = nullptr;
    }
};

// nerve.ImportBudget's native half: a nerve_budget.
struct Budget {
    nerve_budget *b = nullptr;

    Budget(uint64_t max_channel, uint64_t max_total)
    {
        int rc = nerve_budget_open(max_channel, max_total, &b);
        if (rc != 0) {
            raise_nerve(rc);
        }
    }
    ~Budget()
    {
        (void)nerve_budget_close(b);
    }
    Budget(const Budget &) = delete;
    Budget &operator=(const Budget &) = delete;

    uint64_t admit(const std::string &name, uint64_t slots, uint64_t size,
                   std::optional<std::string> type,
                   std::optional<std::string> encoding,
                   std::optional<nb::bytes> schema, bool count)
    {
        struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
        o.slots = slots;
        o.data_size = size;
        o.type = type ? c_str(*type, "a type") : nullptr;
        o.encoding = encoding ? c_str(*encoding, "an encoding") : nullptr;
        if (schema) {
            o.schema = schema->c_str();
            o.schema_len = schema->size();
        }
        uint64_t need = 0;
        int rc = nerve_budget_admit(b, c_str(name, "a channel name"), &o,
                                    count ? 0 : NERVE_BUDGET_UNCOUNTED, &need);
        if (rc != 0) {
            raise_nerve(rc);
        }
        return need;
    }

    bool release(const std::string &name)
    {
        int rc = nerve_budget_release(b, c_str(name, "a channel name"));
        if (rc != 0 && rc != NERVE_ENOENT) {
            raise_nerve(rc);
        }
        return rc == 0;
    }

    nb::dict stats()
    {
        struct nerve_budget_stats st;
        int rc = nerve_budget_stat(b, &st);
        if (rc != 0) {
            raise_nerve(rc);
        }
        nb::dict d;
        d["max_channel"] = st.max_channel;
        d["max_total"] = st.max_total;
        d["used"] = st.used;
        d["channels"] = st.channels;
        d["refused"] = st.refused;
        return d;
    }
};

// nerve.bridge.OwnGuard's native half: a nerve_own.
struct Own {
    nerve_own *o = nullptr;

    Own()
    {
        int rc = nerve_own_open(&o);
        if (rc != 0) {
            raise_nerve(rc);
        }
    }
    ~Own()
    {
        (void)nerve_own_close(o);
    }
    Own(const Own &) = delete;
    Own &operator=(const Own &) = delete;

    uint32_t begin()
    {
        uint32_t tok = 0;
        int rc = nerve_own_begin(o, &tok);
        if (rc != 0) {
            raise_nerve(rc);
        }
        return tok;
    }

    void end(uint32_t tok, std::optional<uint64_t> seq)
    {
        int rc = seq ? nerve_own_commit(o, tok, *seq) : nerve_own_abort(o, tok);
        if (rc != 0) {
            raise_nerve(rc);
        }
    }

    // 1 (ours), 0 (not), or 0 at the bound (counted as late): the wait
    // for a put in flight runs without the GIL, which the put may need.
    bool check(uint64_t seq)
    {
        int rc;
        {
            nb::gil_scoped_release nogil;
            rc = nerve_own_check(o, seq);
        }
        if (rc < 0 && rc != NERVE_ETIMEDOUT) {
            raise_nerve(rc);
        }
        return rc == 1;
    }

    nb::dict stats() const
    {
        struct nerve_own_stats st;
        int rc = nerve_own_stat(o, &st);
        if (rc != 0) {
            raise_nerve(rc);
        }
        nb::dict d;
        d["committed"] = st.committed;
        d["waited"] = st.waited;
        d["late"] = st.late;
        return d;
    }
};

} // namespace

void bind_bridge(nb::module_ &m)
{
    m.def("topic_of_channel", &topic_of_channel, "name"_a, "domain"_a = 0);
    m.def("channel_of_topic", &channel_of_topic, "topic"_a, "domain"_a = 0);
    m.def("glob_check", [](const std::string &glob) {
        int rc = nerve_glob_check(c_str(glob, "a glob"));
        if (rc != 0) {
            raise_nerve(rc);
        }
    });
    m.def("glob_match", &glob_match, "glob"_a, "name"_a);
    m.attr("TOPIC_MAX") = NERVE_TOPIC_MAX;
    m.attr("DIR_SCAN_MS") = NERVE_DIR_SCAN_MS;

    nb::class_<Dir>(m, "ChannelDir")
        .def(nb::init<const std::vector<std::string> &, bool>(), "globs"_a,
             "scan"_a = false)
        .def("fileno", [](const Dir &d) { return nerve_dir_fd(d.use()); })
        .def_prop_ro(
            "inotify",
            [](const Dir &d) { return nerve_dir_inotify(d.use()) == 1; })
        .def("next", &Dir::next)
        .def("close", &Dir::close);

    nb::class_<Budget>(m, "Budget")
        .def(nb::init<uint64_t, uint64_t>(), "max_channel"_a, "max_total"_a)
        .def("admit", &Budget::admit, "name"_a, "slots"_a, "size"_a,
             "type"_a = nb::none(), "encoding"_a = nb::none(),
             "schema"_a = nb::none(), "count"_a = true)
        .def("release", &Budget::release, "name"_a)
        .def("stats", &Budget::stats);

    m.attr("OWN_N") = NERVE_OWN_N;
    nb::class_<Own>(m, "OwnGuard")
        .def(nb::init<>())
        .def("begin", &Own::begin)
        .def("end", &Own::end, "token"_a, "seq"_a = nb::none())
        .def("check", &Own::check, "seq"_a)
        .def("reset", [](Own &g) { (void)nerve_own_reset(g.o); })
        .def("stats", &Own::stats);
}

} // namespace nerve_py
