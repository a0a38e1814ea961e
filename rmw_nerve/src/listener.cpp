// Listener callbacks (rmw_*_set_on_new_*_callback, rmw_event_set_callback),
// what rclcpp's events executor uses instead of wait sets.
//
// CONTRACT (rmw/rmw.h): setting a callback calls it at once with the
// number of messages, requests, replies or events that arrived before it
// was set and were not taken (if any), and then once for each new batch
// with their number, from a thread of the RMW, never from a publisher's
// put. Setting NULL stops the calls: once it returns, the callback is not
// called again.
//
// One thread per process (started at the first callback set, never
// joined: it may outlive every context) holds its own read handle on the
// channel of every subscription, service and client with a callback, and
// waits on all of them at once (nerve_chan_wait_any), at most kPoll at a
// time: the head sequence number that passed its own cursor is the count.
// A channel that does not exist yet is looked for every kPoll; a grown one
// is followed (GROWTH). Events (message lost, incompatible QoS and type,
// deadline, liveliness) are looked at every kPoll: the callback is called
// with 1 each time one becomes ready. A client's reply channel is its
// service's and carries the replies to every client of it, so a client's
// count includes replies to others (a take then finds nothing for it).
//
// The thread waits on its handles without g_mu: an entry removed meanwhile
// is closed by the thread after its wait (g_dead).
//
// LOCKS. g_mu (the registry) is held while a callback is called and while
// an entity's own mutex is taken under it; no path takes g_mu under an
// entity's mutex, so the order is always g_mu, then the entity's.

#include "rmw_nerve.hpp"

#include <algorithm>
#include <condition_variable>

namespace rmw_nerve {

static const int64_t kPoll = 100 * 1000000LL;

namespace {

struct Entry {
    const void *key = nullptr;   // the Subscription, Service, Client or event
    rmw_event_t *ev = nullptr;   // events only
    const void *owner = nullptr; // events: their publisher or subscription
    std::string name, type;      // the channel (topics and services)
    rmw_event_callback_t cb = nullptr;
    const void *user = nullptr;
    uint64_t base = 0;       // count from this sequence number on
    nerve_chan *h = nullptr; // the listener's own handle
    Retired retired;         // handles h followed away from
    bool was_ready = false;  // events
    Entry() = default;
    Entry(const Entry &) = delete;
    Entry &operator=(const Entry &) = delete;
    ~Entry()
    {
        if (h)
            nerve_chan_close(h);
    }
};

// Never destroyed: the thread may run while static destructors do.
std::mutex &g_mu = *new std::mutex;
std::vector<std::unique_ptr<Entry>> &g_entries =
    *new std::vector<std::unique_ptr<Entry>>; // [g_mu]
bool g_started = false;                       // [g_mu]
// Entries removed while the thread may wait on their handles: closed by
// the thread itself, after its wait.
std::vector<std::unique_ptr<Entry>> &g_dead =
    *new std::vector<std::unique_ptr<Entry>>; // [g_mu]

// Remove the entries `drop` selects [g_mu].
template <class Drop> void remove_entries(Drop drop)
{
    for (auto it = g_entries.begin(); it != g_entries.end();) {
        if (drop(**it)) {
            g_dead.push_back(std::move(*it));
            it = g_entries.erase(it);
        } else {
            ++it;
        }
    }
}

// Count what passed the listener's own cursor on e's channel and call
// the callback with it [g_mu].
void poll_channel(Entry &e)
{
    if (!e.h) {
        std::string why;
        if (chan_open_checked(e.name, e.type.c_str(), NERVE_O_READ, &e.h,
                              &why) != 0)
            return;
        struct nerve_stats st;
        if (nerve_chan_stat(e.h, &st) == 0)
            nerve_chan_seek(e.h, std::min(e.base, st.head_seq));
    }
    struct nerve_stats st;
    if (nerve_chan_stat(e.h, &st) != 0)
        return;
    uint64_t cur = nerve_chan_cursor(e.h);
    if (st.head_seq > cur) {
        e.cb(e.user, size_t(st.head_seq - cur));
        nerve_chan_seek(e.h, st.head_seq);
    } else if (st.state_flags & NERVE_STAT_SUPERSEDED) {
        ignore_nerve(chan_follow(&e.h, e.type.c_str(), &e.retired));
    }
}

void run()
{
    for (;;) {
        std::vector<nerve_chan *> chans;
        {
            std::lock_guard<std::mutex> lk(g_mu);
            g_dead.clear();
            for (auto &e : g_entries) {
                if (e->ev) {
                    int64_t next = INT64_MAX;
                    bool ready = event_ready(e->ev, &next);
                    if (ready && !e->was_ready)
                        e->cb(e->user, 1);
                    e->was_ready = ready;
                    continue;
                }
                poll_channel(*e);
                if (e->h && chans.size() < NERVE_WAIT_MAX)
                    chans.push_back(e->h);
            }
        }
        if (chans.empty()) {
            std::this_thread::sleep_for(std::chrono::nanoseconds(kPoll));
            continue;
        }
        uint64_t ready[1] = {0};
        ignore_nerve(
            nerve_chan_wait_any(chans.data(), chans.size(), kPoll, ready, 0));
    }
}

// Set (cb non-null) or clear the callback of `key`; `unread` is what
// arrived before and was not taken. The entry is made by `fill`.
template <class Fill>
rmw_ret_t set_callback(const void *key, rmw_event_callback_t cb,
                       const void *user, Fill fill)
{
    std::lock_guard<std::mutex> lk(g_mu);
    remove_entries([key](const Entry &e) { return e.key == key; });
    if (!cb)
        return RMW_RET_OK;
    auto e = std::make_unique<Entry>();
    e->key = key;
    e->cb = cb;
    e->user = user;
    uint64_t unread = fill(*e);
    if (unread)
        cb(user, size_t(unread));
    g_entries.push_back(std::move(e));
    if (!g_started) {
        std::thread(run).detach();
        g_started = true;
    }
    return RMW_RET_OK;
}

} // namespace

uint64_t chan_unread(nerve_chan *ch, uint64_t *base)
{
    *base = 0; // no channel yet: all its messages will be new
    struct nerve_stats st;
    if (!ch || nerve_chan_stat(ch, &st) != 0)
        return 0;
    *base = st.head_seq;
    uint64_t cur = nerve_chan_cursor(ch);
    return st.head_seq > cur ? st.head_seq - cur : 0;
}

void listener_forget(const void *key)
{
    std::lock_guard<std::mutex> lk(g_mu);
    remove_entries(
        [key](const Entry &e) { return e.key == key || e.owner == key; });
}

} // namespace rmw_nerve

using namespace rmw_nerve;

extern "C" {

rmw_ret_t rmw_subscription_set_on_new_message_callback(rmw_subscription_t *sub,
                                                       rmw_event_callback_t cb,
                                                       const void *user)
{
    CHECK_HANDLE(sub, "subscription");
    auto *s = static_cast<Subscription *>(sub->data);
    return set_callback(s, cb, user, [s](Entry &e) {
        std::lock_guard<std::mutex> lk(s->mu);
        e.name = s->chan_name;
        e.type = s->type.name;
        if (sub_open(s))
            sub_count_lost(s); // keep-last: at most depth are pending
        return chan_unread(s->ch, &e.base);
    });
}

rmw_ret_t rmw_service_set_on_new_request_callback(rmw_service_t *srv,
                                                  rmw_event_callback_t cb,
                                                  const void *user)
{
    CHECK_HANDLE(srv, "service");
    auto *s = static_cast<Service *>(srv->data);
    return set_callback(s, cb, user, [s](Entry &e) {
        return srv_listen(s, &e.name, &e.type, &e.base);
    });
}

rmw_ret_t rmw_client_set_on_new_response_callback(rmw_client_t *cli,
                                                  rmw_event_callback_t cb,
                                                  const void *user)
{
    CHECK_HANDLE(cli, "client");
    auto *c = static_cast<Client *>(cli->data);
    return set_callback(c, cb, user, [c](Entry &e) {
        return cli_listen(c, &e.name, &e.type, &e.base);
    });
}

rmw_ret_t rmw_event_set_callback(rmw_event_t *ev, rmw_event_callback_t cb,
                                 const void *user)
{
    CHECK_HANDLE(ev, "event");
    return set_callback(ev, cb, user, [ev](Entry &e) {
        e.ev = ev;
        e.owner = ev->data;
        int64_t next = INT64_MAX;
        e.was_ready = event_ready(ev, &next);
        return uint64_t(e.was_ready);
    });
}

} // extern "C"
