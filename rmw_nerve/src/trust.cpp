// Trust: which channel files a node may use, checked when it opens one.

#include "rmw_nerve.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rmw_nerve {

// NERVE_RMW_TRUST_GROUP's entry (a name or a gid), or NULL when unset or
// no group.
static struct group *trust_group()
{
    const char *group = getenv("NERVE_RMW_TRUST_GROUP");
    if (!group || !*group)
        return nullptr;
    char *e = nullptr;
    unsigned long n = strtoul(group, &e, 10);
    return *e == '\0' ? getgrgid((gid_t)n) : getgrnam(group);
}

// Trust: readers trust a channel's writers with the file
// (docs/hostile-files.md), so a node uses a topic's, a service's or the
// graph's channel only when the file's owner is trusted: the node's own
// user and root, and the users that NERVE_RMW_TRUST_USERS lists (names or
// uids, comma-separated) or that are members of NERVE_RMW_TRUST_GROUP (a
// group name or gid; its members and the users whose primary group it is).
// The owner alone is not enough: a trusted owner's file that untrusted
// users may write (mode 0666, or group-writable for a group other than
// NERVE_RMW_TRUST_GROUP) is refused too, as such a user could write
// anything into it or truncate it under every node (SIGBUS).
// Invariant: every channel rmw_nerve opens passes here before any message
// of it is read or written (chan_open_checked is the only opener); the
// checks are on the opened descriptor (nerve_chan_stat), so a file swapped
// in after the check is not the one used.
static bool owner_trusted(uint32_t uid, std::string *why)
{
    if (uid == 0 || uid == (uint32_t)geteuid())
        return true;
    struct passwd *pw = getpwuid((uid_t)uid);
    std::string owner = std::to_string(uid);
    if (pw)
        owner += " (" + std::string(pw->pw_name) + ")";
    const char *users = getenv("NERVE_RMW_TRUST_USERS");
    std::string list = users ? users : "";
    size_t at = 0;
    while (at <= list.size() && !list.empty()) {
        size_t end = list.find(',', at);
        std::string u = list.substr(
            at, end == std::string::npos ? std::string::npos : end - at);
        if (!u.empty()) {
            char *e = nullptr;
            unsigned long n = strtoul(u.c_str(), &e, 10);
            if (*e == '\0' ? n == uid : (pw && u == pw->pw_name))
                return true;
            if (*e != '\0' && !getpwnam(u.c_str())) {
                *why = "NERVE_RMW_TRUST_USERS names no user: '" + u + "'";
                return false;
            }
        }
        if (end == std::string::npos)
            break;
        at = end + 1;
    }
    const char *group = getenv("NERVE_RMW_TRUST_GROUP");
    if (group && *group) {
        struct group *gr = trust_group();
        if (!gr) {
            *why = "NERVE_RMW_TRUST_GROUP names no group: '" +
                   std::string(group) + "'";
            return false;
        }
        if (pw && pw->pw_gid == gr->gr_gid)
            return true;
        for (char **m = gr->gr_mem; pw && m && *m; m++)
            if (strcmp(*m, pw->pw_name) == 0)
                return true;
    }
    *why = "the channel's file is owned by uid " + owner +
           ", who is not trusted (trusted: uid " + std::to_string(geteuid()) +
           ", root, NERVE_RMW_TRUST_USERS and NERVE_RMW_TRUST_GROUP)";
    return false;
}

static bool file_trusted(const struct nerve_stats &st, std::string *why)
{
    if (!owner_trusted(st.uid, why))
        return false;
    struct group *gr = (st.mode & S_IWGRP) ? trust_group() : nullptr;
    bool group_ok =
        (st.mode & S_IWGRP) == 0 || (gr && (uint32_t)gr->gr_gid == st.gid);
    if ((st.mode & S_IWOTH) == 0 && group_ok)
        return true;
    char b[200];
    snprintf(b, sizeof b,
             "the channel's file has mode %04o: users who are not trusted "
             "may write it (%s)",
             (unsigned)(st.mode & 07777),
             (st.mode & S_IWOTH) ? "writable by others"
                                 : "writable by a group that is not "
                                   "NERVE_RMW_TRUST_GROUP");
    *why = b;
    return false;
}

int chan_open_checked(const std::string &name, const char *type, uint32_t flags,
                      nerve_chan **out, std::string *why)
{
    nerve_chan *c = nullptr;
    int r = nerve_chan_open(name.c_str(), flags, &c);
    if (r) {
        *why = std::string(nerve_err_name(r)) + ": " + nerve_strerror(r);
        return r;
    }
    struct nerve_stats st;
    r = nerve_chan_stat(c, &st);
    if (r || !file_trusted(st, why)) {
        if (r)
            *why = "the channel's owner cannot be read";
        nerve_chan_close(c);
        return NERVE_EPERM;
    }
    struct nerve_meta m;
    if (nerve_chan_meta(c, &m) != 0 || !m.type || !m.encoding ||
        strcmp(m.type, type) != 0 ||
        strcmp(m.encoding, encoding_of(type)) != 0) {
        char b[400];
        snprintf(b, sizeof b,
                 "the channel carries type '%s' encoding '%s', not type '%s' "
                 "encoding '%s'",
                 m.type ? m.type : "", m.encoding ? m.encoding : "", type,
                 encoding_of(type));
        *why = b;
        nerve_chan_close(c);
        return NERVE_EMISMATCH;
    }
    *out = c;
    return 0;
}

} // namespace rmw_nerve
