/* Option parsing shared by the verbs (declared in tools/cli.h): getopt
 * set-up, names, counts, modes, times and --format. Sizes have their own
 * file, cli_size.c. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_reset_getopt(void)
{
    optind = 1;
    opterr = 0;
}

int cli_bad_option(const char *verb, int argc, char **argv)
{
    const char *opt = optind - 1 < argc ? argv[optind - 1] : "?";
    char esc[256];
    return cli_usage(verb, "unknown option or missing value: '%s'",
                     cli_text_buf(esc, sizeof esc, opt));
}

int cli_help_only(const char *verb, int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            return cli_print_help(verb);
        }
        return cli_bad_option(verb, argc, argv);
    }
    return -1;
}

int cli_check_name(const char *verb, const char *name)
{
    int rc = nerve_chan_name_check(name);
    if (rc != 0) {
        char esc[4 * NERVE_NAME_MAX + 64];
        fprintf(stderr, "nerve %s: '%s': %s: %s\n", verb,
                cli_text_buf(esc, sizeof esc, name), nerve_err_name(rc),
                nerve_err_detail(rc));
        return CLI_USAGE;
    }
    return 0;
}

int cli_shm_dir(char *out, size_t len)
{
    char prefix[NERVE_PATH_MAX];
    out[0] = '\0';
    if (nerve_chan_path(NULL, 0, prefix, sizeof prefix) != 0) {
        return -1;
    }
    char *slash = strrchr(prefix, '/');
    if (slash == NULL || (size_t)(slash - prefix) >= len) {
        return -1;
    }
    *slash = '\0';
    snprintf(out, len, "%s", prefix[0] ? prefix : "/");
    return 0;
}

int cli_seconds_to_ns(const char *verb, const char *s, int64_t *ns)
{
    double sec;
    if (cli_parse_seconds(s, &sec) != 0 || sec > 9e9) {
        return cli_usage(verb, "bad time '%s' (seconds, e.g. 1.5)", s);
    }
    *ns = (int64_t)(sec * 1e9);
    return 0;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    /* A digit first: strtoull() would skip blanks and accept a sign. */
    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_mode(const char *s, uint32_t *out)
{
    char *end;
    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    unsigned long v = strtoul(s, &end, 8);
    /* Permission bits only: the library refuses setuid/setgid/sticky. */
    if (errno != 0 || *end != '\0' || v > 0777) {
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int cli_parse_seconds(const char *s, double *out)
{
    char *end;
    if (s == NULL || *s == '\0') {
        return -1;
    }
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v) || v < 0) {
        return -1;
    }
    if (*end == 's' && end[1] == '\0') {
        end++;
    } else if (strcmp(end, "ms") == 0) {
        v /= 1e3;
        end += 2;
    }
    if (*end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_time(const char *s, int64_t now_ns, int64_t *out)
{
    char *end;
    if (s == NULL || *s == '\0') {
        return -1;
    }
    if (*s != '-' && *s != '+') {
        /* Absolute: integer nanoseconds of CLOCK_MONOTONIC. */
        uint64_t v;
        if (cli_parse_u64(s, &v) != 0 || v > INT64_MAX) {
            return -1;
        }
        *out = (int64_t)v;
        return 0;
    }
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v)) {
        return -1;
    }
    double scale;
    if (strcmp(end, "s") == 0) {
        scale = 1e9;
    } else if (strcmp(end, "ms") == 0) {
        scale = 1e6;
    } else if (strcmp(end, "us") == 0) {
        scale = 1e3;
    } else if (strcmp(end, "ns") == 0) {
        scale = 1;
    } else {
        return -1;
    }
    double t = (double)now_ns + v * scale;
    if (t < 0 || t > 9.2e18) {
        return -1;
    }
    *out = (int64_t)t;
    return 0;
}

int cli_parse_format(const char *verb, const char *s, enum cli_fmt *f)
{
    if (strcmp(s, "raw") == 0) {
        *f = CLI_FMT_RAW;
    } else if (strcmp(s, "hex") == 0) {
        *f = CLI_FMT_HEX;
    } else if (strcmp(s, "text") == 0) {
        *f = CLI_FMT_TEXT;
    } else if (strcmp(s, "json") == 0) {
        *f = CLI_FMT_JSON;
    } else {
        char esc[64];
        return cli_usage(verb, "unknown format '%s' (raw, hex, text, json)",
                         cli_text_buf(esc, sizeof esc, s));
    }
    return 0;
}
