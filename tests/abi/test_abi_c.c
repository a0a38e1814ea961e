/* Public headers under -std=c11 -pedantic -Werror, and the ABI rules of
 * docs/abi.md that a program can check:
 *   - `test_abi_c --sizes` prints "STRUCT SIZE" for every public struct;
 *     check_record.sh compares that with abi_record.txt, the sizes
 *     recorded for each ABI version;
 *   - without arguments: input structs begin with `size` and their _INIT
 *     macros set it; output structs come back with their reserved tails
 *     zeroed however the caller left them; nerve_version() agrees with the
 *     headers; an errno nerve gives no meaning of its own reads back as
 *     -errno. */
#include <nerve/nerve.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(offsetof(struct nerve_chan_opts, size) == 0, "opts.size first");
_Static_assert(offsetof(struct nerve_rt_prio_map, size) == 0, "map.size first");
_Static_assert(offsetof(struct nerve_task_opts, size) == 0, "task.size first");
_Static_assert(NERVE_GET_MASK == 3, "get modes");

#define ROW(s)                                                                 \
    {                                                                          \
#s, sizeof(struct s)                                                   \
    }
static const struct {
    const char *name;
    size_t size;
} sizes[] = {
    ROW(nerve_chan_opts),  ROW(nerve_put_info),    ROW(nerve_get_info),
    ROW(nerve_view),       ROW(nerve_stats),       ROW(nerve_meta),
    ROW(nerve_rt_applied), ROW(nerve_rt_prio_map), ROW(nerve_rt_caps),
    ROW(nerve_rt_series),  ROW(nerve_task_tick),   ROW(nerve_task_opts),
    ROW(nerve_task_stats), ROW(nerve_dir_event),   ROW(nerve_budget_stats),
    ROW(nerve_own_stats),
};

static int fails;
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            fails++;                                                           \
        }                                                                      \
    } while (0)

static int zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i])
            return 0;
    }
    return 1;
}
#define TAIL_ZERO(x) zero((x).reserved, sizeof(x).reserved)

static int tick_tail_zero = -1;

static int one_tick(void *arg, const struct nerve_task_tick *tick)
{
    (void)arg;
    tick_tail_zero = TAIL_ZERO(*tick) && TAIL_ZERO(tick->msg_info);
    return 1; /* stop after one cycle */
}

/* A channel's output structs: the library zeroes the reserved tail. */
static void chan_outputs(struct nerve_chan_opts *o)
{
    char name[64];
    snprintf(name, sizeof name, "nt-abi-%d", (int)getpid());
    o->slots = 8;
    o->data_size = 4096;
    CHECK(nerve_chan_create(name, o) == 0);
    nerve_chan *c = NULL;
    CHECK(nerve_chan_open(name, NERVE_O_WRITE, &c) == 0);
    if (c) {
        struct nerve_put_info pi;
        struct nerve_get_info gi;
        struct nerve_view v;
        struct nerve_stats st;
        struct nerve_meta m;
        memset(&pi, 0xa5, sizeof pi);
        memset(&gi, 0xa5, sizeof gi);
        memset(&v, 0xa5, sizeof v);
        memset(&st, 0xa5, sizeof st);
        memset(&m, 0xa5, sizeof m);
        CHECK(nerve_chan_put(c, "x", 1, 0, &pi, 0) == 0 && TAIL_ZERO(pi));
        CHECK(pi.reserved0 == 0);
        char b[8];
        CHECK(nerve_chan_get(c, b, 0, 0, 0, &gi, NERVE_GET_NEWEST) ==
                  NERVE_EMSGSIZE &&
              TAIL_ZERO(gi));
        memset(&gi, 0xa5, sizeof gi);
        CHECK(nerve_chan_get(c, b, sizeof b, 0, 0, &gi, NERVE_GET_NEWEST) ==
                  0 &&
              TAIL_ZERO(gi));
        CHECK(nerve_chan_view(c, 1, 0, &v, NERVE_GET_SEQ) == 0 &&
              TAIL_ZERO(v.info));
        CHECK(nerve_chan_stat(c, &st) == 0 && TAIL_ZERO(st));
        CHECK(nerve_chan_meta(c, &m) == 0 && TAIL_ZERO(m));
        CHECK(nerve_chan_close(c) == 0);
    }
    CHECK(nerve_chan_unlink(name) == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--sizes") == 0) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            printf("%s %zu\n", sizes[i].name, sizes[i].size);
        return 0;
    }

    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    struct nerve_rt_prio_map pm = NERVE_RT_PRIO_MAP_INIT;
    struct nerve_task_opts to = NERVE_TASK_OPTS_INIT;
    CHECK(o.size == sizeof o && pm.size == sizeof pm && to.size == sizeof to);

    const char *text = NULL;
    CHECK(nerve_version(&text) == NERVE_VERSION_NUMBER);
    CHECK(text && strcmp(text, NERVE_VERSION_STRING) == 0);
    CHECK(nerve_version(NULL) == NERVE_VERSION_NUMBER);

    /* Codes: the table's own, and any other errno passed through. */
    CHECK(nerve_err_name(NERVE_EVERSION)[0] == 'E');
    CHECK(strcmp(nerve_err_name(NERVE_EDECODE), "EDECODE") == 0);
    CHECK(strcmp(nerve_err_name(-EIO), "EIO") == 0);

    chan_outputs(&o);

    struct nerve_rt_caps caps;
    memset(&caps, 0xa5, sizeof caps);
    CHECK(nerve_rt_probe(&caps) == 0 && TAIL_ZERO(caps));
    int64_t rel[3] = {0, 10, 20}, wake[3] = {1, 12, 21};
    struct nerve_rt_series a, r;
    memset(&a, 0xa5, sizeof a);
    memset(&r, 0xa5, sizeof r);
    CHECK(nerve_rt_timing_compute(rel, wake, 3, &a, &r) == 0 && TAIL_ZERO(a) &&
          TAIL_ZERO(r) && a.n == 3);
    struct nerve_rt_applied ap;
    memset(&ap, 0xa5, sizeof ap);
    int pol, prio;
    CHECK(nerve_rt_sched_get(&pol, &prio) == 0);
    CHECK(nerve_rt_sched_set(pol, prio, NERVE_RT_BEST_EFFORT, &ap) == 0 &&
          TAIL_ZERO(ap));

    /* A clock task of one cycle run on this thread. */
    to.period_ns = 1000000;
    nerve_task *t = NULL;
    CHECK(nerve_task_open(&to, one_tick, NULL, &t) == 0);
    if (t) {
        CHECK(nerve_task_run(t) == 0);
        CHECK(tick_tail_zero == 1);
        struct nerve_task_stats ts;
        memset(&ts, 0xa5, sizeof ts);
        CHECK(nerve_task_stat(t, &ts) == 0 && TAIL_ZERO(ts) &&
              TAIL_ZERO(ts.exec) && ts.cycles == 1);
        nerve_task_close(t);
    }

    if (fails)
        return 1;
    printf("ok\n");
    return 0;
}
