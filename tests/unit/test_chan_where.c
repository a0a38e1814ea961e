/* What tools need to know of a channel's file without knowing the layout
 * (issue 31, item 3): nerve_chan_path() names the file and the bell,
 * nerve_chan_file_size() predicts the file's size exactly (what create
 * commits), and nerve_chan_stat() reports the writer lock's holder and
 * its flags. Each is checked against the file itself. */
#include "nerve_test.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void check_paths(const char *name)
{
    char path[NERVE_PATH_MAX], bell[NERVE_PATH_MAX], prefix[NERVE_PATH_MAX];
    NT_OK(nerve_chan_path(name, 0, path, sizeof path));
    NT_OK(nerve_chan_path(name, NERVE_PATH_BELL, bell, sizeof bell));
    NT_OK(nerve_chan_path(NULL, 0, prefix, sizeof prefix));
    /* The path is the prefix followed by the name. */
    NT_EQ(strncmp(path, prefix, strlen(prefix)), 0);
    NT_EQ(strcmp(path + strlen(prefix), name), 0);
    NT_ASSERT(strcmp(path, bell) != 0);
    /* Both name the files create made, and the file is as big as stat
     * says. */
    struct stat fs, bs;
    NT_EQ(lstat(path, &fs), 0);
    NT_EQ(lstat(bell, &bs), 0);
    NT_ASSERT(S_ISREG(fs.st_mode) && S_ISREG(bs.st_mode));
    struct nerve_stats st;
    NT_OK(nerve_chan_stat_name(name, &st));
    NT_EQ((uint64_t)fs.st_size, st.file_size);

    /* Bad input: a clear code, never a write past the buffer. */
    char small[8] = "xxxxxxx";
    NT_RC(nerve_chan_path(name, 0, small, sizeof small), NERVE_EMSGSIZE);
    NT_EQ(small[0], 0);
    NT_RC(nerve_chan_path("a/b", 0, path, sizeof path), NERVE_EINVAL);
    NT_RC(nerve_chan_path(name, 0x80, path, sizeof path), NERVE_EINVAL);
    NT_RC(nerve_chan_path(name, 0, NULL, 64), NERVE_EINVAL);
    NT_RC(nerve_chan_path(name, 0, path, 0), NERVE_EINVAL);
    char longname[NERVE_NAME_MAX + 8];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    NT_RC(nerve_chan_path(longname, 0, path, sizeof path), NERVE_ENAMETOOLONG);
}

/* Predict, create, compare with the file. */
static void check_size(uint64_t slots, uint64_t data_size, const char *type,
                       const char *encoding, size_t schema_len)
{
    static char schema[10000];
    memset(schema, 's', sizeof schema);
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    o.slots = slots;
    o.data_size = data_size;
    o.type = type;
    o.encoding = encoding;
    o.schema = schema_len ? schema : NULL;
    o.schema_len = schema_len;
    uint64_t want = 0;
    NT_OK(nerve_chan_file_size(&o, &want));
    const char *name = nt_name("size");
    NT_OK(nerve_chan_create(name, &o));
    char path[NERVE_PATH_MAX];
    NT_OK(nerve_chan_path(name, 0, path, sizeof path));
    struct stat fs;
    NT_EQ(lstat(path, &fs), 0);
    if ((uint64_t)fs.st_size != want)
        NT_FAIL("slots %llu, data %llu, schema %zu: predicted %llu bytes, "
                "the file has %llu",
                (unsigned long long)slots, (unsigned long long)data_size,
                schema_len, (unsigned long long)want,
                (unsigned long long)fs.st_size);
    NT_OK(nerve_chan_unlink(name));
}

static void check_lock_owner(const char *name)
{
    nerve_chan *w, *r;
    struct nerve_stats st;
    NT_OK(nerve_chan_open(name, NERVE_O_WRITE, &w));
    NT_OK(nerve_chan_open(name, NERVE_O_READ, &r));
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.lock_owner_tid, 0u);
    NT_EQ(st.lock_flags, 0u);
    NT_EQ(st.state_flags, 0u); /* not superseded */
    NT_EQ(st.reserved0, 0u);

    /* A reservation holds the lock: this thread is its owner. */
    void *p;
    NT_OK(nerve_chan_reserve(w, 16, 0, &p, 0));
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.lock_owner_tid, (uint32_t)syscall(SYS_gettid));
    NT_EQ(st.lock_flags & NERVE_LOCK_OWNER_DIED, 0u);
    NT_OK(nerve_chan_commit(w, 16, NULL));
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.lock_owner_tid, 0u);

    /* A process that dies holding it: the kernel's robust list frees the
     * word and marks the owner dead, which stat reports until the next
     * writer recovers it. */
    pid_t child = fork();
    NT_CMP(child, >=, 0);
    if (child == 0) {
        nerve_chan *cw;
        void *cp;
        if (nerve_chan_open(name, NERVE_O_WRITE, &cw) != 0 ||
            nerve_chan_reserve(cw, 16, 0, &cp, 0) != 0)
            _exit(1);
        _exit(0); /* holding the lock */
    }
    int status;
    NT_EQ(waitpid(child, &status, 0), child);
    NT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.lock_owner_tid, 0u);
    NT_ASSERT(st.lock_flags & NERVE_LOCK_OWNER_DIED);
    struct nerve_put_info pi;
    NT_OK(nerve_chan_put(w, "x", 1, 0, &pi, 0));
    NT_EQ(pi.recovered, 1u);
    NT_OK(nerve_chan_stat(r, &st));
    NT_EQ(st.lock_owner_tid, 0u);
    NT_EQ(st.lock_flags, 0u);
    NT_OK(nerve_chan_close(r));
    NT_OK(nerve_chan_close(w));
}

int main(void)
{
    nt_watchdog(60);
    const char *name = nt_name("where");
    nt_create(name, 8, 4096);
    check_paths(name);
    check_lock_owner(name);
    NT_OK(nerve_chan_unlink(name));

    /* Defaults, odd geometries, metadata on one and on several pages. */
    check_size(0, 0, NULL, NULL, 0);
    check_size(1, 1, NULL, NULL, 0);
    check_size(7, 5000, "pkg/msg/Type", "cdr", 100);
    check_size(129, 4096 * 3 + 1, "t", "e", 9000);
    /* What create refuses, file_size refuses too. */
    uint64_t size = 0;
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    NT_RC(nerve_chan_file_size(&o, NULL), NERVE_EINVAL);
    o.data_size = (1ull << 40) + 1;
    NT_RC(nerve_chan_file_size(&o, &size), NERVE_EINVAL);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EINVAL), "data ring") != NULL);
    o.data_size = 0;
    o.slots = (1ull << 32) + 1;
    NT_RC(nerve_chan_file_size(&o, &size), NERVE_EINVAL);
    o.slots = 0;
    o.type = "bad\ntype";
    NT_RC(nerve_chan_file_size(&o, &size), NERVE_EINVAL);
    return 0;
}
