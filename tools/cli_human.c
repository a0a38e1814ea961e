/* Human-readable numbers of the text output (declared in tools/cli.h). */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

void cli_human_bytes(char *out, size_t len, uint64_t v)
{
    static const char *unit[] = {"", "K", "M", "G", "T"};
    int u = 0;
    double d = (double)v;
    while (d >= 1024 && u < 4 && (v % 1024 == 0 || d >= 10 * 1024)) {
        d /= 1024;
        v /= 1024;
        u++;
    }
    if (d == (double)(uint64_t)d) {
        snprintf(out, len, "%" PRIu64 "%s", (uint64_t)d, unit[u]);
    } else {
        snprintf(out, len, "%.1f%s", d, unit[u]);
    }
}

void cli_mem_str(char *out, size_t len, uint64_t v)
{
    char h[32];
    cli_human_bytes(h, sizeof h, v);
    size_t n = strlen(h);
    if (n > 0 && h[n - 1] >= 'A' && h[n - 1] <= 'Z') {
        snprintf(out, len, "%.*s %ciB", (int)(n - 1), h, h[n - 1]);
    } else {
        snprintf(out, len, "%s bytes", h);
    }
}

void cli_human_age(char *out, size_t len, int64_t ns)
{
    double s = (double)ns / 1e9;
    if (s < 1e-3) {
        snprintf(out, len, "%.0fus", s * 1e6);
    } else if (s < 1) {
        snprintf(out, len, "%.0fms", s * 1e3);
    } else if (s < 120) {
        snprintf(out, len, "%.1fs", s);
    } else if (s < 7200) {
        snprintf(out, len, "%.0fm", s / 60);
    } else if (s < 172800) {
        snprintf(out, len, "%.0fh", s / 3600);
    } else {
        snprintf(out, len, "%.0fd", s / 86400);
    }
}

uint64_t cli_present(const struct nerve_stats *st)
{
    return st->head_seq >= st->tail_seq ? st->head_seq - st->tail_seq + 1 : 0;
}
