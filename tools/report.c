/* The records of tools/report.h: JSON strings, UTC stamps, the host. */
#include "report.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <nerve/version.h>

void json_byte(FILE *f, unsigned char c, int latin1)
{
    switch (c) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    case '\b': fputs("\\b", f); break;
    case '\f': fputs("\\f", f); break;
    default:
        if (c < 0x20 || c == 0x7f || (latin1 && c >= 0x80)) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
}

void json_str(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        json_byte(f, (unsigned char)s[i], 0);
    }
    fputc('"', f);
}

void iso8601(char *out, size_t len, int64_t ns)
{
    time_t sec = (time_t)(ns / 1000000000);
    long frac = (long)(ns % 1000000000);
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    struct tm tm;
    gmtime_r(&sec, &tm);
    char date[40];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%09ldZ", date, frac);
}

void iso8601_now(char *out, size_t len)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    iso8601(out, len, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
}

/* ---- the host ------------------------------------------------------------ */

/* The first line of a file, without its newline ("" if unreadable). */
static void read_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    if (fgets(out, (int)len, f) == NULL) {
        out[0] = '\0';
    }
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static void cpu_model(char *out, size_t len)
{
    char line[512];
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':');
            if (v != NULL) {
                v++;
                while (*v == ' ') {
                    v++;
                }
                v[strcspn(v, "\n")] = '\0';
                snprintf(out, len, "%s", v);
            }
            break;
        }
    }
    fclose(f);
}

/* Whether /proc/cpuinfo lists `flag` (e.g. "hypervisor": a virtual
 * machine). */
static int cpu_flag(const char *flag)
{
    char line[4096];
    int found = 0;
    size_t n = strlen(flag);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return 0;
    }
    while (!found && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "flags", 5) != 0) {
            continue;
        }
        for (char *p = strstr(line, flag); p != NULL && !found;
             p = strstr(p + 1, flag)) {
            found = (p == line || p[-1] == ' ') &&
                    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
        }
        break;
    }
    fclose(f);
    return found;
}

void host_probe(struct host *h, int fifo)
{
    struct utsname u;
    cpu_model(h->cpu, sizeof h->cpu);
    h->cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&u) == 0) {
        snprintf(h->kernel, sizeof h->kernel, "%s %s", u.release, u.version);
    } else {
        snprintf(h->kernel, sizeof h->kernel, "unknown");
    }
    read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
              h->governor, sizeof h->governor);
    read_line("/sys/devices/system/cpu/isolated", h->isolated,
              sizeof h->isolated);
    char rt[16];
    read_line("/sys/kernel/realtime", rt, sizeof rt);
    h->preempt_rt = strcmp(rt, "1") == 0 || strstr(h->kernel, "PREEMPT_RT");
    h->vm = cpu_flag("hypervisor");
    h->rt = -1;
    if (fifo > 0) {
        struct sched_param sp = {.sched_priority = fifo};
        struct sched_param zero = {.sched_priority = 0};
        h->rt = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
        if (h->rt && sched_setscheduler(0, SCHED_OTHER, &zero) != 0) {
            /* the caller only measures; staying FIFO here is harmless */
        }
    }
}

static void json_cstring(FILE *f, const char *s)
{
    json_str(f, s, strlen(s));
}

void host_json(FILE *f, const struct host *h)
{
    fputs("{\"cpu\":", f);
    json_cstring(f, h->cpu);
    fprintf(f, ",\"cores\":%ld,\"kernel\":", h->cores);
    json_cstring(f, h->kernel);
    fputs(",\"governor\":", f);
    if (h->governor[0]) {
        json_cstring(f, h->governor);
    } else {
        fputs("null", f);
    }
    fputs(",\"isolated\":", f);
    json_cstring(f, h->isolated);
    fprintf(f,
            ",\"vm\":%s,\"preempt_rt\":%s,\"rt_granted\":%s,"
            "\"nerve\":\"" NERVE_VERSION_STRING "\"}",
            h->vm ? "true" : "false", h->preempt_rt ? "true" : "false",
            h->rt < 0 ? "null"
            : h->rt   ? "true"
                      : "false");
}
