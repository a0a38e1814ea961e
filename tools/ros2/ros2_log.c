/* Everything nerve-ros2-dds prints on stderr passes here. Two defences:
 *
 * ESCAPING. Topics, type names, peer data and Cyclone's own messages come
 * from the network; each line goes through the command's one escaper
 * (cli_ctext, tools/cli_text.c), so no peer writes an escape sequence into
 * the operator's terminal.
 *
 * RATE. One peer can make many lines: 500 endpoints of bad types, or one
 * random-bytes writer that makes Cyclone warn about every packet (measured
 * at 9,000 lines a second). At most ROS2_LOG_PER_SEC lines are printed per
 * second (a fixed window of CLOCK_MONOTONIC); the rest are counted, and
 * the count is said as "N lines suppressed" before the next line printed
 * and at exit. So stderr grows by at most about ROS2_LOG_PER_SEC + 1
 * lines a second whatever peers do. */
#include "ros2_log.h"

#include "../cli.h"

#include <dds/dds.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t window_ns;    /* [mu] start of the current second */
static unsigned used;        /* [mu] lines printed in it */
static uint64_t suppressed;  /* [mu] lines held back since the last one */
static const char *dds_prog; /* [const] once routed */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Under mu. */
static void say_suppressed(const char *prog)
{
    if (suppressed > 0) {
        fprintf(stderr,
                "%s: %" PRIu64 " lines suppressed (more than %d a second)\n",
                prog, suppressed, ROS2_LOG_PER_SEC);
        suppressed = 0;
    }
}

void ros2_logv(const char *prog, int limited, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    pthread_mutex_lock(&mu);
    int64_t now = mono_ns();
    if (now - window_ns >= 1000000000) {
        window_ns = now;
        used = 0;
    }
    if (limited && used >= ROS2_LOG_PER_SEC) {
        suppressed++;
    } else {
        used += limited ? 1 : 0;
        say_suppressed(prog);
        fprintf(stderr, "%s: ", prog);
        cli_ctext(stderr, line);
        fputc('\n', stderr);
        fflush(stderr);
    }
    pthread_mutex_unlock(&mu);
}

void ros2_log(const char *prog, int limited, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ros2_logv(prog, limited, fmt, ap);
    va_end(ap);
}

void ros2_log_flush(const char *prog)
{
    pthread_mutex_lock(&mu);
    say_suppressed(prog);
    fflush(stderr);
    pthread_mutex_unlock(&mu);
}

/* Cyclone's sink: one call per message, which may end in a newline and
 * may hold any bytes a peer sent (they are escaped). */
static void dds_sink(void *arg, const dds_log_data_t *d)
{
    /* The trace sink gets the log sink's categories too: said once. */
    if (arg != NULL && (d->priority & DDS_LOG_MASK) != 0) {
        return;
    }
    size_t n = d->size;
    const char *m = d->message;
    if (m == NULL) {
        return;
    }
    while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == '\r')) {
        n--;
    }
    if (n > 900) {
        n = 900;
    }
    ros2_log(dds_prog, 1, "dds: %.*s", (int)n, m);
}

void ros2_log_route_dds(const char *prog)
{
    dds_prog = prog;
    /* The log sink gets the info, warning, error and fatal messages; the
     * trace sink also gets the trace categories, and only those of the
     * log mask: routed too, so nothing of Cyclone's reaches stderr
     * unescaped or unlimited. */
    dds_set_log_sink(dds_sink, NULL);
    dds_set_trace_sink(dds_sink, (void *)"trace");
}
