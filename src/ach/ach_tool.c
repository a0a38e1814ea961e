/* nerve-ach (installed as `ach` on request): Ach's channel tool on nerve.
 *
 *   ach mk NAME [-1] [-m COUNT] [-n SIZE] [-o MODE] [-t]
 *   ach rm NAME | ach chmod MODE NAME | ach dump NAME | ach file NAME
 *   deprecated: -C NAME (mk), -U NAME (rm), -D NAME (dump), -F NAME (file)
 *
 * Exit status: 0 on success, 1 on any failure (a message on stderr names
 * the channel and the Ach status), 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ach.h"
#include <nerve/nerve.h>

enum verb { V_NONE, V_MK, V_RM, V_CHMOD, V_DUMP, V_FILE };

struct opts {
    enum verb verb;
    const char *name;
    size_t count, size;
    long mode; /* -1: not given */
    int accept_existing, truncate, verbose;
};

static void help(FILE *f)
{
    fputs("usage: ach [OPTION...] mk|rm|chmod|dump|file [MODE] CHANNEL\n"
          "Create, remove, inspect and chmod Ach channels (nerve channels of\n"
          "the same name; see docs/ach.md).\n"
          "  mk CHANNEL          create a channel\n"
          "  rm CHANNEL          remove a channel\n"
          "  chmod MODE CHANNEL  set its permission bits (octal)\n"
          "  dump CHANNEL        print its facts\n"
          "  file CHANNEL        print its file name\n"
          "Options:\n"
          "  -1         with mk, accept a channel that already exists\n"
          "  -m COUNT   frames to buffer (default 16)\n"
          "  -n SIZE    nominal frame size in bytes (default 512)\n"
          "  -o OCTAL   permission bits of the created channel\n"
          "  -t         with mk, remove and re-create an existing channel\n"
          "  -v         verbose\n"
          "  -V, --version  print the version\n"
          "  -h, -?, --help this help\n"
          "Deprecated: -C CHANNEL (mk), -U CHANNEL (rm), -D CHANNEL (dump),\n"
          "-F CHANNEL (file).\n",
          f);
}

__attribute__((format(printf, 1, 2))) static int usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ach: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'ach -h'.\n");
    va_end(ap);
    return 2;
}

static int parse_count(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v == 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_mode(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 8);
    if (errno || end == s || *end || v < 0 || v > 0777)
        return -1;
    *out = v;
    return 0;
}

static int set_verb(struct opts *o, enum verb v, const char *name)
{
    if (o->verb != V_NONE)
        return usage("only one command may be given%s", "");
    o->verb = v;
    if (name)
        o->name = name;
    return 0;
}

static int failed(enum ach_status r, const char *what, const char *name)
{
    const char *detail = ach_errstr();
    fprintf(stderr, "ach: %s '%s': %s%s%s%s\n", what, name,
            ach_result_to_string(r), detail[0] ? " (" : "", detail,
            detail[0] ? ")" : "");
    return 1;
}

static int do_chmod(const char *name, long mode)
{
    ach_channel_t c;
    enum ach_status r = ach_open(&c, name, NULL);
    if (r != ACH_OK)
        return failed(r, "cannot open", name);
    r = ach_chmod(&c, (mode_t)mode);
    enum ach_status rc = ach_close(&c);
    if (r != ACH_OK)
        return failed(r, "cannot chmod", name);
    return rc == ACH_OK ? 0 : failed(rc, "cannot close", name);
}

static int run(const struct opts *o)
{
    enum ach_status r;
    switch (o->verb) {
    case V_MK: {
        ach_create_attr_t attr;
        ach_create_attr_init(&attr);
        attr.truncate = o->truncate ? 1u : 0u;
        r = ach_create(o->name, o->count, o->size, &attr);
        if (r == ACH_EEXIST && o->accept_existing)
            r = ACH_OK;
        else if (r != ACH_OK)
            return failed(r, "cannot create", o->name);
        if (o->verbose)
            fprintf(stderr, "ach: created %s (%zu frames of %zu bytes)\n",
                    o->name, o->count, o->size);
        return o->mode >= 0 ? do_chmod(o->name, o->mode) : 0;
    }
    case V_RM:
        r = ach_unlink(o->name);
        return r == ACH_OK ? 0 : failed(r, "cannot remove", o->name);
    case V_CHMOD: return do_chmod(o->name, o->mode);
    case V_DUMP: {
        ach_channel_t c;
        r = ach_open(&c, o->name, NULL);
        if (r != ACH_OK)
            return failed(r, "cannot open", o->name);
        ach_dump(c.shm);
        r = ach_close(&c);
        return r == ACH_OK ? 0 : failed(r, "cannot close", o->name);
    }
    case V_FILE: {
        char path[NERVE_PATH_MAX];
        int rc = nerve_chan_path(o->name, 0, path, sizeof path);
        if (rc != 0) {
            fprintf(stderr, "ach: '%s': %s\n", o->name, nerve_err_detail(rc));
            return 1;
        }
        printf("%s\n", path);
        return 0;
    }
    case V_NONE: break;
    }
    return usage("no command given%s", "");
}

/* What the option parsing steps return to go on; anything else is the exit
 * status to return at once (0 after --help or --version, 2 on a usage
 * error, its message said). */
#define GO_ON (-1)

/* --help (and --version) as GNU tools take them, before any other
 * argument is looked at; Ach's own flags are all short. */
static int long_flags(int argc, char **argv)
{
    for (int k = 1; k < argc && strcmp(argv[k], "--") != 0; k++) {
        if (strcmp(argv[k], "--help") == 0) {
            help(stdout);
            return 0;
        }
        if (strcmp(argv[k], "--version") == 0) {
            ach_print_version("ach");
            return 0;
        }
    }
    return GO_ON;
}

/* The verb of a deprecated verb flag (-C -U -D -F). */
static enum verb flag_verb(int c)
{
    return c == 'C' ? V_MK : c == 'U' ? V_RM : c == 'D' ? V_DUMP : V_FILE;
}

/* One result `c` of getopt (argument `arg`) into `o`; positional arguments
 * (c == 1) collect in `pos`, at most 3. GO_ON or the exit status. */
static int parse_opt(int c, const char *arg, struct opts *o, const char **pos,
                     int *npos)
{
    switch (c) {
    case 'C':
    case 'U':
    case 'D':
    case 'F': {
        int rc = set_verb(o, flag_verb(c), arg);
        return rc ? rc : GO_ON;
    }
    case 'm':
        if (parse_count(arg, &o->count))
            return usage("-m: the frame count must be a positive "
                         "integer, not '%s'",
                         arg);
        return GO_ON;
    case 'n':
        if (parse_count(arg, &o->size))
            return usage("-n: the frame size must be a positive "
                         "integer, not '%s'",
                         arg);
        return GO_ON;
    case 'o':
        if (parse_mode(arg, &o->mode))
            return usage("-o: the mode must be octal 0..777, not '%s'", arg);
        return GO_ON;
    case '1': o->accept_existing = 1; return GO_ON;
    case 't': o->truncate = 1; return GO_ON;
    case 'v': o->verbose++; return GO_ON;
    case 'V': ach_print_version("ach"); return 0;
    case 'h':
    case 'H': help(stdout); return 0;
    case 1:
        if (*npos == 3)
            return usage("unexpected argument '%s'", arg);
        pos[(*npos)++] = arg;
        return GO_ON;
    case '?':
        if (optopt == '?') {
            help(stdout);
            return 0;
        }
        return usage("unknown option or missing argument: -%c", optopt);
    default: return usage("unknown option%s", "");
    }
}

/* The verb named by `word` (Ach's names and their synonyms, any case), or
 * V_NONE. */
static enum verb verb_named(const char *word)
{
    static const struct {
        const char *w;
        enum verb v;
    } verbs[] = {{"mk", V_MK},       {"create", V_MK}, {"make", V_MK},
                 {"rm", V_RM},       {"unlink", V_RM}, {"remove", V_RM},
                 {"chmod", V_CHMOD}, {"dump", V_DUMP}, {"file", V_FILE}};
    enum verb v = V_NONE;
    for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++) {
        if (strcasecmp(word, verbs[k].w) == 0)
            v = verbs[k].v;
    }
    return v;
}

/* The positional arguments `pos` into `o`: the verb first unless a
 * deprecated flag gave it, then chmod's MODE, then the one channel name
 * (unless the flag gave it). GO_ON or the exit status. */
static int bind_positionals(struct opts *o, const char **pos, int npos)
{
    int i = 0;
    if (o->verb == V_NONE && npos > 0) {
        o->verb = verb_named(pos[0]);
        if (o->verb == V_NONE)
            return usage("unknown command '%s'", pos[0]);
        i = 1;
    }
    if (o->verb == V_CHMOD) {
        if (npos - i != 2)
            return usage("usage: ach chmod MODE CHANNEL%s", "");
        if (parse_mode(pos[i], &o->mode))
            return usage("chmod: the mode must be octal 0..777, not '%s'",
                         pos[i]);
        o->name = pos[i + 1];
    } else if (o->verb != V_NONE && o->name == NULL) {
        if (npos - i != 1)
            return usage("give exactly one channel name%s", "");
        o->name = pos[i];
    } else if (npos - i != 0) {
        return usage("unexpected argument '%s'", pos[i]);
    }
    if (o->verb == V_NONE)
        return usage("no command given%s", "");
    return GO_ON;
}

int main(int argc, char **argv)
{
    struct opts o = {
        V_NONE, NULL, ACH_DEFAULT_FRAME_COUNT, ACH_DEFAULT_FRAME_SIZE, -1, 0,
        0,      0};
    const char *pos[3];
    int npos = 0, c;
    opterr = 0;
    int rc = long_flags(argc, argv);
    if (rc != GO_ON)
        return rc;
    /* '-' first: positional arguments come back in order as option 1. */
    while ((c = getopt(argc, argv, "-C:U:D:F:m:n:o:1tvVhH?")) != -1) {
        rc = parse_opt(c, optarg, &o, pos, &npos);
        if (rc != GO_ON)
            return rc;
    }
    rc = bind_positionals(&o, pos, npos);
    if (rc != GO_ON)
        return rc;
    return run(&o);
}
