// Topic channels: create one for a type, follow a successor a grower
// made, grow one for a larger message, release one. (Opening one, with
// its trust checks, is trust.cpp's.)
//
// A channel that already exists (another publisher's or subscription's,
// `nerve ros2`'s, a nerve program's, an earlier run's) is used when its
// type and encoding are right, and refused with a clear error otherwise. A
// message larger than the channel holds grows it (nerve_chan_grow: a
// larger successor under the same name, with every message present), up to
// NERVE_RMW_MAX_DATA_SIZE; subscriptions, and publishers of other
// processes, follow the successor (chan_make_room, chan_has_news).

#include "rmw_nerve.hpp"

namespace rmw_nerve {

const char *encoding_of(const std::string &type)
{
    if (type.rfind("rmw_nerve/", 0) == 0)
        return "text";
    if (type.find("/srv/") != std::string::npos)
        return "rmw_nerve-service"; // 32-byte header, then CDR: service.cpp
    return "cdr";
}

int chan_create_for(const std::string &name, const std::string &type,
                    const std::string &schema, uint64_t slots,
                    uint64_t data_size, bool remove_unused)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.flags = NERVE_C_EXIST_OK | (remove_unused ? NERVE_C_REMOVE_UNUSED : 0);
    o.slots = slots;
    o.data_size = data_size;
    o.type = type.c_str();
    o.encoding = encoding_of(type);
    o.schema = schema.empty() ? nullptr : schema.c_str();
    o.schema_len = schema.size();
    return nerve_chan_create(name.c_str(), &o);
}

RMW_NERVE_HOT bool chan_has_news(nerve_chan *ch, RenameLook *look,
                                 int64_t *next_ns)
{
    // A new message after the cursor or the superseded mark, both read
    // from the mapped header by a wait of no time (no system call, unlike
    // nerve_chan_stat's fstat); the name's stat only when neither is there.
    uint64_t ready = 0;
    return nerve_chan_wait_any(&ch, 1, 0, &ready, 0) > 0 ||
           chan_renamed_unmarked(ch, look, next_ns);
}

RMW_NERVE_HOT bool chan_renamed_unmarked(nerve_chan *ch, RenameLook *look,
                                         int64_t *next_ns)
{
    // A grower killed between its rename and its mark (G4-G5 in
    // src/chan_open.c) leaves the old channel unmarked, and the next
    // writer may write to the successor only: nothing new here ever
    // again, and no wake-up either (its commits wake the successor's
    // waiters). So an idle reader asks the name (an lstat), but at most
    // once per RenameLook::kEvery, not at every look that finds nothing:
    // that was a system call a message. Where the look is not due, the
    // caller's wait ends when it is (*next_ns), so such a successor is
    // followed within kEvery of its first message, woken or not.
    int64_t now = mono_ns();
    if (now >= look->due_ns) {
        look->due_ns = now + RenameLook::kEvery;
        if (nerve_chan_renamed(ch) == 1) {
            // Due again at once: the take that follows a wait's "ready"
            // asks again before it follows.
            look->due_ns = 0;
            return true;
        }
    }
    if (next_ns && look->due_ns < *next_ns)
        *next_ns = look->due_ns;
    return false;
}

int chan_follow(nerve_chan **ch, const char *type, Retired *retired)
{
    if (nerve_chan_renamed(*ch) == 0)
        return 0; // not superseded yet (a grower died before marking it)
    nerve_chan *n = nullptr;
    std::string why;
    int r =
        chan_open_checked(nerve_chan_name(*ch), type, NERVE_O_READ, &n, &why);
    if (r) {
        fprintf(stderr, "rmw_nerve: cannot follow the grown channel '%s': %s\n",
                nerve_chan_name(*ch), why.c_str());
        return r;
    }
    // F2: a successor continues the sequence and keeps the channel's
    // created_ns, so the cursor stays; a channel made anew under the name
    // is read from its oldest message (a new handle's start).
    struct nerve_stats st, old;
    uint64_t cur = nerve_chan_cursor(*ch);
    if (nerve_chan_stat(n, &st) == 0 && nerve_chan_stat(*ch, &old) == 0 &&
        st.created_ns == old.created_ns && st.head_seq >= cur)
        nerve_chan_seek(n, cur);
    retired->v.push_back(*ch);
    *ch = n;
    return 0;
}

uint64_t chan_max_data()
{
    uint64_t e = env_size("NERVE_RMW_MAX_DATA_SIZE");
    return e ? e : (1ull << 30);
}

int chan_make_room(nerve_chan **ch, int r, uint64_t want, uint64_t slots)
{
    if (r == NERVE_ESUPERSEDED)
        return nerve_chan_follow(ch);
    if (r != NERVE_EMSGSIZE)
        return r;
    if (want > chan_max_data())
        want = chan_max_data();
    struct nerve_stats st;
    if (nerve_chan_stat(*ch, &st) != 0 || want <= st.data_size)
        return NERVE_EMSGSIZE; // no larger ring allowed
    return nerve_chan_grow(ch, want, slots);
}

void chan_release(nerve_chan *c, const std::string &name)
{
    nerve_chan_close(c);
    // The last user removes it (NERVE_EBUSY: others still use it;
    // NERVE_EPERM: a channel made by `nerve create`, which stays).
    (void)nerve_chan_remove_unused(name.c_str());
}

} // namespace rmw_nerve
