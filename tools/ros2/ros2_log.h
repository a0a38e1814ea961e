/* The lines nerve-ros2-dds prints on stderr: escaped (cli_ctext) and
 * rate-limited, its own and Cyclone DDS's (ros2_log.c). */
#ifndef NERVE_ROS2_LOG_H
#define NERVE_ROS2_LOG_H

#include <stdarg.h>

/* Print "PROG: " and the formatted line, escaped. A `limited` line (one a
 * peer can cause, as many times as it likes) is held back when
 * ROS2_LOG_PER_SEC limited lines were printed in the current second; the
 * lines held back are counted and said in one "suppressed" line before
 * the next one printed (and by ros2_log_flush). Lines of the operator's
 * own configuration (one per topic) are not limited.
 * Thread: any (one lock).  Blocking: writes stderr.  RT: not safe.
 * Signal: not safe. */
void ros2_log(const char *prog, int limited, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ros2_logv(const char *prog, int limited, const char *fmt, va_list ap);

/* Say the count of lines held back since the last one printed, if any. */
void ros2_log_flush(const char *prog);

/* Route Cyclone DDS's log lines (its warnings, such as a flood of
 * "malformed packet" from a peer, and its errors) through ros2_log, under
 * the same limit, prefixed "dds: ". Call before the first DDS entity. */
void ros2_log_route_dds(const char *prog);

#define ROS2_LOG_PER_SEC 20

#endif
