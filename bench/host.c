/* The machine a result was measured on (host.h): CPU model, cores,
 * kernel, frequency governor, isolated CPUs, virtual machine or not,
 * PREEMPT_RT, and whether SCHED_FIFO was granted. */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "host.h"

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

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
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
            /* the parent only sleeps; a failure here is harmless */
        }
    }
}

void host_json(FILE *f, const struct host *h)
{
    fputs("{\"cpu\":", f);
    json_string(f, h->cpu);
    fprintf(f, ",\"cores\":%ld,\"kernel\":", h->cores);
    json_string(f, h->kernel);
    fputs(",\"governor\":", f);
    if (h->governor[0]) {
        json_string(f, h->governor);
    } else {
        fputs("null", f);
    }
    fputs(",\"isolated\":", f);
    json_string(f, h->isolated);
    fprintf(f, ",\"vm\":%s,\"preempt_rt\":%s,\"rt_granted\":%s}",
            h->vm ? "true" : "false", h->preempt_rt ? "true" : "false",
            h->rt < 0 ? "null"
            : h->rt   ? "true"
                      : "false");
}
