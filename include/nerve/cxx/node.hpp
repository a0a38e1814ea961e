// nerve C++ API: callback subscribers and the Node that drives them.
//
// A Node holds up to NERVE_WAIT_MAX (64) subscribers. spin_once(timeout)
// makes ONE nerve_chan_wait_any() call over all their channels (a multi-futex
// wait, no polling), then reads the channels that have data and calls the
// callbacks; spin() repeats that until stop().
//
// CALLBACK ORDER. Within one spin_once(), callbacks run in the order of the
// messages' commit times (CLOCK_MONOTONIC, stamped by the writer at commit)
// across all subscribers, as a k-way merge: each ready subscriber holds its
// next message, the one with the earliest time is delivered, and that
// subscriber then reads its next. Equal times go in subscription order.
// The merge only sees messages committed before the wait returned (a time
// snapshot taken then): anything newer, including what a callback itself
// publishes, waits for the next spin_once(), so a later message on one
// channel never overtakes an earlier one on another.
// So a controller subscribed to an IMU and a joint-state channel sees
// their messages in the order they were published, not grouped by
// channel. Per subscriber:
//   - Delivery::every calls back once per message, oldest first, at most
//     one ring's worth (its slot count) per spin_once(), so a fast writer
//     cannot hold the node forever; messages overwritten before they were
//     read are counted in stats().missed;
//   - Delivery::newest calls back at most once per spin_once(), with the
//     newest message committed before the snapshot, skipping the calls a slow consumer does not need
//     (fuRom (K. Irie, RSJ 2017: shared-memory pub/sub with a ROS-like API)'s remark on callback subscribers).
// Only channels the wait reported ready are read in that round.
//
// STOPPING. stop() sets a flag and cancels every subscriber's handle
// (nerve_chan_cancel: one atomic store and one futex wake each), so a
// spin() in another thread returns promptly, including one blocked in the
// wait. stop() is async-signal-safe: call it from a SIGINT handler. It is
// sticky: spin() returns at once until reset(). stop() must not run
// concurrently with subscribing or unsubscribing (those change the handle
// table it walks); spinning is the only thing it may race with.
//
// THREADS. One thread spins a Node; subscribe and unsubscribe from that
// thread (a callback may unsubscribe any subscriber, itself included: a
// subscriber that unsubscribes itself from its callback is freed when the
// callback returns).
//
// EXCEPTIONS. A callback may throw; spin_once() lets the exception through
// after putting back every message already read for other subscribers but
// not yet delivered, so the next spin_once() delivers them (none is lost).
// The message whose callback threw counts as delivered.
// Nothing in spin_once() allocates except what the callbacks and codecs
// do: a raw T is read straight into a buffer the subscriber owns.
#ifndef NERVE_CXX_NODE_HPP
#define NERVE_CXX_NODE_HPP

#include <nerve/cxx/channel.hpp>
#include <nerve/cxx/reader.hpp>
#include <nerve/cxx/result.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

namespace nerve {

/// Which messages a Subscriber's callback gets.
enum class Delivery : uint8_t {
    every, ///< every message, oldest first (missed ones are counted)
    newest ///< only the newest message at each spin
};

/// How Node::subscribe() opens its channel.
struct SubscribeOptions {
    Delivery mode = Delivery::every;
    /// Create the channel (with `channel`) if it does not exist yet, so a
    /// subscriber may start before its publisher.
    bool create = false;
    ChannelOptions channel;
    /// How spin_once() waits for this subscriber (see WaitPolicy in
    /// reader.hpp): a Node polls all its channels for the longest spin
    /// any of its subscribers asks for, then blocks. Default: no spin.
    WaitPolicy wait;
};

/// Counters of one subscriber, read from the spinning thread.
struct SubscriberStats {
    uint64_t received = 0; ///< callbacks made
    uint64_t missed = 0; ///< messages overwritten (or undecodable) before read
    uint64_t errors = 0; ///< failed reads (ELAPPED, EDECODE, ...)
    int last_error = 0;  ///< code of the last failed read
};

template <class T> class Subscriber;
class Node;

namespace detail {

// One subscriber as the Node sees it: type-erased by two function
// pointers (no virtual functions), plus the merge state of a spin.
struct sub_entry {
    void *state = nullptr;
    int (*load)(void *state, int64_t limit_ns, int64_t *time_ns) = nullptr;
    void (*deliver)(void *state) = nullptr;
    void (*restore)(void *state) = nullptr; // un-read the loaded message
    Node **node = nullptr;  // the state's back pointer, cleared by ~Node
    uint64_t max_reads = 0; // reads per spin: slot count (every) or 1 (newest)
    uint64_t budget = 0;    // reads left this spin
    int64_t spin_ns = 0;    // SubscribeOptions::wait.spin
    int64_t time_ns = 0;    // commit time of the loaded message
    bool pending = false;   // a message is loaded and not yet delivered
};

} // namespace detail

/// Waits on many channels at once and calls their subscribers' callbacks.
/// Neither copyable nor movable (subscribers point to it). Destroy it only
/// when it is not spinning; subscribers that outlive it are detached.
class Node {
public:
    Node() noexcept = default;
    Node(const Node &) = delete;
    Node &operator=(const Node &) = delete;
    ~Node();

    /// Subscribe `cb` to channel `name` carrying T. cb is invocable as
    /// cb(const T &) or cb(const T &, const nerve::MsgInfo &). Returns the
    /// Subscriber handle: keep it; destroying it unsubscribes. Errors: as
    /// Reader<T>::open(), and NERVE_EINVAL when the node already has
    /// NERVE_WAIT_MAX subscribers. Setup phase (allocates).
    template <class T, class F>
    Result<Subscriber<T>> subscribe(std::string_view name, F &&cb,
                                    const SubscribeOptions &o = {});
    template <class T, class F>
    Result<Subscriber<T>> subscribe(std::string_view name, F &&cb,
                                    Delivery mode)
    {
        SubscribeOptions o;
        o.mode = mode;
        return subscribe<T>(name, std::forward<F>(cb), o);
    }

    /// Wait up to `timeout` for any subscribed channel to have a message,
    /// then deliver as the file comment says. Returns the number of
    /// callbacks made (0 on timeout), or NERVE_ECANCELED after stop(),
    /// NERVE_EINVAL with no subscribers, NERVE_ECORRUPT (a channel failed
    /// validation; the other subscribers were still served).
    /// Thread: the spinning thread.  Blocking: one futex wait, after a
    /// busy poll when a subscriber's wait policy asks for one.
    Result<size_t> spin_once(Duration timeout = forever)
    {
        if (stop_.load(std::memory_order_acquire)) {
            return fail(NERVE_ECANCELED);
        }
        if (n_ == 0) {
            return fail(NERVE_EINVAL);
        }
        uint64_t ready = 0;
        int64_t to = detail::timeout_ns(timeout);
        int64_t spin = 0;
        for (size_t i = 0; i < n_; i++) {
            spin = entries_[i].spin_ns > spin ? entries_[i].spin_ns : spin;
        }
        int rc = NERVE_EAGAIN;
        if (spin > 0 && to != 0) {
            // The wait policy's poll: nerve_chan_wait_any with a zero timeout
            // only loads the heads (no system call). stop() ends it.
            rc = spin_wait(
                [&]() -> int {
                    if (stop_.load(std::memory_order_acquire)) {
                        return NERVE_ECANCELED;
                    }
                    int r = nerve_chan_wait_any(chans_, n_, 0, &ready, 0);
                    return r == NERVE_ETIMEDOUT ? NERVE_EAGAIN : r;
                },
                spin, &to);
        }
        if (rc == NERVE_EAGAIN) {
            rc = nerve_chan_wait_any(chans_, n_, to, &ready, 0);
        }
        // The snapshot: what was committed by now is this spin's to deliver.
        const int64_t limit = nerve_clock_now_ns();
        if (rc == NERVE_ETIMEDOUT) {
            return size_t{0};
        }
        if (rc < 0) {
            return fail(rc);
        }
        return dispatch(ready, limit);
    }

    /// spin_once() until stop(). Returns success when stopped, else the
    /// error that ended it (NERVE_ECORRUPT, or NERVE_ECANCELED when a
    /// subscriber's handle was cancelled by other means).
    Result<void> spin()
    {
        while (!stop_.load(std::memory_order_acquire)) {
            auto r = spin_once(forever);
            if (!r) {
                if (stop_.load(std::memory_order_acquire)) {
                    break;
                }
                return fail(r.code());
            }
        }
        return {};
    }

    /// Make spin() return and spin_once() fail with NERVE_ECANCELED, now
    /// and until reset(). Thread: any.  Signal: safe (atomic stores and
    /// futex wakes only); see the file comment for the one restriction.
    void stop() noexcept
    {
        // SYNC(node-stop) release: pairs with the acquire loads in spin();
        // the cancel below wakes a spin blocked in nerve_chan_wait_any, and is
        // sticky, so a stop between the flag check and the wait is not lost.
        stop_.store(true, std::memory_order_release);
        for (size_t i = 0; i < n_; i++) {
            nerve_chan_cancel(chans_[i]);
        }
    }

    /// Undo stop(): clear the flag and the handles' cancellation.
    /// Thread: the spinning thread, while not spinning.
    void reset() noexcept
    {
        stop_.store(false, std::memory_order_release);
        for (size_t i = 0; i < n_; i++) {
            nerve_chan_cancel_clear(chans_[i]);
        }
    }

    bool stopped() const noexcept
    {
        return stop_.load(std::memory_order_acquire);
    }
    /// Number of subscribers.
    size_t size() const noexcept
    {
        return n_;
    }

private:
    template <class T> friend class Subscriber;

    int attach(nerve_chan *c, const detail::sub_entry &e) noexcept
    {
        if (n_ >= NERVE_WAIT_MAX) {
            return NERVE_EINVAL;
        }
        entries_[n_] = e;
        chans_[n_] = c;
        n_++;
        mutations_++;
        if (stop_.load(std::memory_order_acquire)) {
            nerve_chan_cancel(c);
        }
        return 0;
    }

    void detach(void *state) noexcept
    {
        for (size_t i = 0; i < n_; i++) {
            if (entries_[i].state == state) {
                for (size_t j = i + 1; j < n_; j++) {
                    entries_[j - 1] = entries_[j];
                    chans_[j - 1] = chans_[j];
                }
                n_--;
                mutations_++;
                return;
            }
        }
    }

    // Load a message committed at or before `limit` into entry i
    // (respecting its budget) and mark it pending. Records the first hard
    // error in *hard.
    void load(size_t i, int64_t limit, int *hard)
    {
        detail::sub_entry &e = entries_[i];
        e.pending = false;
        while (e.budget > 0) {
            e.budget--;
            int rc = e.load(e.state, limit, &e.time_ns);
            if (rc == 0) {
                e.pending = true;
                return;
            }
            if (rc == NERVE_EDECODE) {
                continue; // consumed and counted; try the next one
            }
            if (rc != NERVE_EAGAIN && rc != NERVE_ELAPPED && *hard == 0) {
                *hard = rc;
            }
            return;
        }
    }

    // A subscriber state that unsubscribed itself from its own callback:
    // freed once that callback has returned (or thrown).
    void free_doomed() noexcept
    {
        if (doomed_ != nullptr) {
            void *d = doomed_;
            doomed_ = nullptr;
            doomed_destroy_(d);
        }
    }

    // Runs when dispatch() ends, normally or by a callback's exception:
    // un-read the messages loaded but not delivered, free a doomed state.
    struct dispatch_guard {
        Node &n;
        ~dispatch_guard()
        {
            n.delivering_ = nullptr;
            n.free_doomed();
            for (size_t i = 0; i < n.n_; i++) {
                if (n.entries_[i].pending) {
                    n.entries_[i].pending = false;
                    n.entries_[i].restore(n.entries_[i].state);
                }
            }
        }
    };

    Result<size_t> dispatch(uint64_t ready, int64_t limit)
    {
        dispatch_guard guard{*this};
        int hard = 0;
        for (size_t i = 0; i < n_; i++) {
            entries_[i].pending = false;
            entries_[i].budget = 0;
        }
        for (size_t i = 0; i < n_; i++) {
            if (ready & (uint64_t{1} << i)) {
                entries_[i].budget = entries_[i].max_reads;
                load(i, limit, &hard);
            }
        }
        size_t calls = 0;
        for (;;) {
            size_t best = n_;
            for (size_t i = 0; i < n_; i++) {
                if (entries_[i].pending &&
                    (best == n_ ||
                     entries_[i].time_ns < entries_[best].time_ns)) {
                    best = i;
                }
            }
            if (best == n_) {
                break;
            }
            void *st = entries_[best].state;
            entries_[best].pending = false;
            const uint64_t before = mutations_;
            delivering_ = st;
            entries_[best].deliver(st);
            delivering_ = nullptr;
            free_doomed();
            calls++;
            if (mutations_ != before) {
                // The callback (un)subscribed: find the entry again.
                best = n_;
                for (size_t i = 0; i < n_; i++) {
                    if (entries_[i].state == st) {
                        best = i;
                    }
                }
                if (best == n_) {
                    continue;
                }
            }
            load(best, limit, &hard);
        }
        if (hard != 0) {
            return fail(hard);
        }
        return calls;
    }

    detail::sub_entry entries_[NERVE_WAIT_MAX];
    nerve_chan *chans_[NERVE_WAIT_MAX] = {};
    size_t n_ = 0;
    uint64_t mutations_ = 0;
    void *delivering_ = nullptr; // the state whose callback is running
    void *doomed_ = nullptr;     // see free_doomed()
    void (*doomed_destroy_)(void *) = nullptr;
    std::atomic<bool> stop_{false};
};

namespace detail {

template <class T> struct sub_state {
    Reader<T> reader;
    std::function<void(const T &, const MsgInfo &)> cb;
    Delivery mode;
    Node *node = nullptr;
    T msg{};
    MsgInfo info;
    SubscriberStats stats;

    sub_state(Reader<T> &&r,
              std::function<void(const T &, const MsgInfo &)> &&f, Delivery m)
        : reader(std::move(r)), cb(std::move(f)), mode(m)
    {
    }

    // Read the next (every) or newest (newest) message committed at or
    // before limit_ns; a newer one is left for the next spin.
    static int load(void *p, int64_t limit_ns, int64_t *time_ns)
    {
        auto *s = static_cast<sub_state *>(p);
        nerve_chan *c = s->reader.native_handle();
        int rc;
        if (s->mode == Delivery::every) {
            rc = read_one(c, s->msg, 0, 0, NERVE_GET_NEXT, s->info);
            if (rc == 0 && s->info.time_ns > limit_ns) {
                // Too new for this spin: un-read it. The losses before it
                // are counted now (a re-read starts from it).
                s->stats.missed += s->info.missed;
                nerve_chan_seek(c, s->info.seq - 1);
                return NERVE_EAGAIN;
            }
        } else {
            // The newest message at the snapshot; the cursor says whether
            // it was already delivered (as NERVE_GET_NEWEST does).
            const uint64_t cur = nerve_chan_cursor(c);
            rc = read_one(c, s->msg, limit_ns, 0, NERVE_GET_AT, s->info);
            if (rc == NERVE_EOVERWRITTEN) {
                return NERVE_EAGAIN; // everything present is newer
            }
            if (rc == 0 || rc == NERVE_EDECODE) {
                if (s->info.seq <= cur) {
                    return NERVE_EAGAIN;
                }
                s->info.missed = s->info.seq - cur - 1;
                nerve_chan_seek(c, s->info.seq);
            }
        }
        if (rc == 0) {
            *time_ns = s->info.time_ns;
            s->stats.missed += s->info.missed;
        } else if (rc != NERVE_EAGAIN) {
            s->stats.errors++;
            s->stats.last_error = rc;
            if (rc == NERVE_EDECODE) {
                s->stats.missed += s->info.missed + 1;
            }
        }
        return rc;
    }

    // Put the loaded, undelivered message back (its losses stay counted).
    static void restore(void *p) noexcept
    {
        auto *s = static_cast<sub_state *>(p);
        s->reader.seek(s->info.seq - 1);
    }

    static void destroy(void *p) noexcept
    {
        delete static_cast<sub_state *>(p);
    }

    static void deliver(void *p)
    {
        auto *s = static_cast<sub_state *>(p);
        s->stats.received++;
        s->cb(s->msg, s->info);
    }
};

} // namespace detail

/// A callback subscription of a Node to one channel carrying T. Move-only
/// handle; destroying it unsubscribes. Create it with Node::subscribe().
template <class T> class Subscriber {
public:
    Subscriber() noexcept = default;
    Subscriber(Subscriber &&) noexcept = default;
    Subscriber &operator=(Subscriber &&o) noexcept
    {
        if (this != &o) {
            unsubscribe();
            s_ = std::move(o.s_);
        }
        return *this;
    }
    ~Subscriber()
    {
        unsubscribe();
    }

    /// Leave the node and close the channel. Thread: the spinning thread
    /// (also from a callback).
    void unsubscribe() noexcept
    {
        if (s_ && s_->node) {
            Node *n = s_->node;
            n->detach(s_.get());
            s_->node = nullptr;
            if (n->delivering_ == s_.get()) {
                // Called from this subscriber's own callback, which is
                // still running in its state: the node frees it after.
                n->doomed_ = s_.release();
                n->doomed_destroy_ = &detail::sub_state<T>::destroy;
                return;
            }
        }
        s_.reset();
    }

    /// Counters; read them from the spinning thread. An empty (default or
    /// moved-from) Subscriber has zero counters, no name, mode every and
    /// an empty reader.
    const SubscriberStats &stats() const noexcept
    {
        static const SubscriberStats none{};
        return s_ ? s_->stats : none;
    }
    Delivery mode() const noexcept
    {
        return s_ ? s_->mode : Delivery::every;
    }
    std::string_view name() const noexcept
    {
        return s_ ? s_->reader.name() : std::string_view{};
    }
    /// The subscriber's reader, e.g. for get_by_timestamp() on the same
    /// channel from a callback. Do not move its cursor outside callbacks.
    /// Only for a non-empty Subscriber.
    Reader<T> &reader() noexcept
    {
        return s_->reader;
    }
    explicit operator bool() const noexcept
    {
        return bool(s_);
    }

private:
    friend class Node;
    explicit Subscriber(std::unique_ptr<detail::sub_state<T>> s) noexcept
        : s_(std::move(s))
    {
    }
    std::unique_ptr<detail::sub_state<T>> s_;
};

inline Node::~Node()
{
    // Subscribers that outlive the node must not call back into it.
    for (size_t i = 0; i < n_; i++) {
        *entries_[i].node = nullptr;
    }
}

template <class T, class F>
Result<Subscriber<T>> Node::subscribe(std::string_view name, F &&cb,
                                      const SubscribeOptions &o)
{
    using callback = std::function<void(const T &, const MsgInfo &)>;
    callback fn;
    if constexpr (std::is_invocable_v<F &, const T &, const MsgInfo &>) {
        fn = std::forward<F>(cb);
    } else {
        static_assert(std::is_invocable_v<F &, const T &>,
                      "the callback must be invocable as f(const T &) or "
                      "f(const T &, const nerve::MsgInfo &)");
        fn = [f = std::forward<F>(cb)](const T &m, const MsgInfo &) mutable {
            f(m);
        };
    }
    if (n_ >= NERVE_WAIT_MAX) {
        return fail(NERVE_EINVAL);
    }
    auto r = o.create ? Reader<T>::open_or_create(name, o.channel)
                      : Reader<T>::open(name);
    if (!r) {
        return fail(r.code());
    }
    const uint64_t reads = o.mode == Delivery::every ? r->batch_max() : 1;
    auto st = std::make_unique<detail::sub_state<T>>(std::move(*r),
                                                     std::move(fn), o.mode);
    detail::sub_entry e;
    e.state = st.get();
    e.load = &detail::sub_state<T>::load;
    e.deliver = &detail::sub_state<T>::deliver;
    e.restore = &detail::sub_state<T>::restore;
    e.node = &st->node;
    e.max_reads = reads;
    e.spin_ns = o.wait.spin.count() > 0 ? o.wait.spin.count() : 0;
    int rc = attach(st->reader.native_handle(), e);
    if (rc < 0) {
        return fail(rc);
    }
    st->node = this;
    return Subscriber<T>(std::move(st));
}

} // namespace nerve

#endif
