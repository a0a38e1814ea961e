/* nerve get: print one message (newest, next, by sequence number or by
 * time), optionally waiting for it. The reading itself is cli_read_run(),
 * shared with nerve cat. */
#include "../cli.h"

#include <getopt.h>
#include <inttypes.h>

static const char help[] =
    "usage: nerve get NAME [--newest|--next|--seq N|--at TIME] [--wait]\n"
    "                      [--timeout SEC] [--format raw|hex|text|json]\n"
    "Print one message.\n"
    "  --newest         the newest message (default)\n"
    "  --next           the oldest message still in the channel\n"
    "  --seq N          the message with sequence number N\n"
    "  --at TIME        the newest message committed at or before TIME:\n"
    "                   CLOCK_MONOTONIC nanoseconds (as in time_ns), or\n"
    "                   relative to now with a unit: -1.5s, -200ms, -30us\n"
    "  --wait           wait for a message if there is none (--newest,\n"
    "                   --next, --seq)\n"
    "  --timeout SEC    with --wait: give up after SEC seconds (exit 1);\n"
    "                   a missing channel is waited for to be created\n"
    "  --format F       raw (bytes as they are), hex (dump), text (bytes and\n"
    "                   a newline; default; escaped to a terminal), json\n"
    "                   (one object: seq, time, time_ns, size, missed, text\n"
    "                   or base64)\n";

static const struct option opts[] = {
    {"newest", no_argument, NULL, 'N'},
    {"next", no_argument, NULL, 'n'},
    {"seq", required_argument, NULL, 's'},
    {"at", required_argument, NULL, 'a'},
    {"wait", no_argument, NULL, 'w'},
    {"timeout", required_argument, NULL, 't'},
    {"format", required_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Why --at found nothing: the time of the oldest message present (seq
 * tail), if it can be read. Returns CLI_FAIL (reported). */
static int explain_at(const struct cli_read *r, nerve_chan *ch, int rc,
                      uint64_t tail)
{
    struct nerve_get_info oi;
    char b;
    const char *code = nerve_err_name(rc);
    int e = nerve_chan_get(ch, &b, 0, (int64_t)tail, 0, &oi, NERVE_GET_SEQ);
    if (e != 0 && e != NERVE_EMSGSIZE) {
        return cli_fail("get",
                        "%s: %s: no message committed at or before %" PRId64
                        " ns is still present",
                        r->name, code, r->arg);
    }
    char iso[64];
    iso8601(iso, sizeof iso, nerve_clock_to_realtime_ns(oi.time_ns));
    return cli_fail("get",
                    "%s: %s: no message committed at or before %" PRId64
                    " ns: the oldest present (seq %" PRIu64
                    ") was committed at %" PRId64 " ns (%s)",
                    r->name, code, r->arg, tail, oi.time_ns, iso);
}

/* Why --seq or --at found nothing, with the range that is present.
 * Returns CLI_FAIL, or -1 for the plain error message. */
static int explain(const struct cli_read *r, nerve_chan *ch, int rc)
{
    uint32_t which = r->flags & NERVE_GET_MASK;
    struct nerve_stats st;
    if ((rc != NERVE_EAGAIN && rc != NERVE_EOVERWRITTEN) ||
        (which != NERVE_GET_AT && which != NERVE_GET_SEQ) ||
        nerve_chan_stat(ch, &st) != 0) {
        return -1;
    }
    const char *name = r->name, *code = nerve_err_name(rc);
    uint64_t tail = st.tail_seq ? st.tail_seq : 1;
    if (st.head_seq == 0) {
        return cli_fail("get", "%s: %s: the channel has no message yet", name,
                        code);
    }
    if (which == NERVE_GET_SEQ && rc == NERVE_EAGAIN) {
        return cli_fail("get",
                        "%s: %s: message %" PRId64 " is not published yet "
                        "(the newest is %" PRIu64 "; --wait waits for it)",
                        name, code, r->arg, st.head_seq);
    }
    if (which == NERVE_GET_SEQ) {
        return cli_fail("get",
                        "%s: %s: message %" PRId64 " was overwritten "
                        "(present: %" PRIu64 " to %" PRIu64 ")",
                        name, code, r->arg, tail, st.head_seq);
    }
    return explain_at(r, ch, rc, tail);
}

/* What the command line asks for. */
struct get_args {
    uint32_t which;
    int nwhich, wait, have_timeout;
    int64_t arg, timeout;
    const char *at;
    enum cli_fmt fmt;
};

/* Parse the options into *a. Returns -1 to go on, or the exit code. */
static int parse_opts(int argc, char **argv, struct get_args *a)
{
    int c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'N':
            a->which = NERVE_GET_NEWEST;
            a->nwhich++;
            break;
        case 'n':
            a->which = NERVE_GET_NEXT;
            a->nwhich++;
            break;
        case 's': {
            uint64_t v;
            if (cli_parse_u64(optarg, &v) != 0 || v == 0 || v > INT64_MAX) {
                return cli_usage("get", "bad --seq '%s'", optarg);
            }
            a->which = NERVE_GET_SEQ;
            a->arg = (int64_t)v;
            a->nwhich++;
            break;
        }
        case 'a':
            a->at = optarg;
            a->which = NERVE_GET_AT;
            a->nwhich++;
            break;
        case 'w': a->wait = 1; break;
        case 't':
            if (cli_seconds_to_ns("get", optarg, &a->timeout) != 0) {
                return CLI_USAGE;
            }
            a->have_timeout = 1;
            break;
        case 'f':
            if (cli_parse_format("get", optarg, &a->fmt) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("get");
        default: return cli_bad_option("get", argc, argv);
        }
    }
    return -1;
}

/* The rules between the options and the operand. Returns -1 to go on, or
 * CLI_USAGE (reported). */
static int check_args(int argc, struct get_args *a)
{
    if (optind != argc - 1) {
        return cli_usage("get", optind >= argc ? "missing NAME"
                                               : "too many arguments");
    }
    if (a->nwhich > 1) {
        return cli_usage("get", "give at most one of --newest, --next, --seq, "
                                "--at");
    }
    if (a->wait && a->which == NERVE_GET_AT) {
        return cli_usage("get", "--wait does not apply to --at");
    }
    if (a->have_timeout && !a->wait) {
        return cli_usage("get", "--timeout needs --wait");
    }
    if (a->at != NULL &&
        cli_parse_time(a->at, nerve_clock_now_ns(), &a->arg) != 0) {
        return cli_usage("get",
                         "bad --at '%s' (nanoseconds, or -1.5s, "
                         "-200ms, -30us)",
                         a->at);
    }
    return -1;
}

static int run(int argc, char **argv)
{
    struct get_args a = {
        .which = NERVE_GET_NEWEST,
        .timeout = NERVE_FOREVER,
        .fmt = CLI_FMT_TEXT,
    };
    int status = parse_opts(argc, argv, &a);
    if (status < 0) {
        status = check_args(argc, &a);
    }
    if (status >= 0) {
        return status;
    }
    /* "missed" counts what this reader could have had and lost: a one-shot
     * get has no previous message, so the history before it is not loss
     * (--next: the oldest present; --newest: the newest present). */
    struct cli_read r = {
        .verb = "get",
        .name = argv[optind],
        .start = a.which == NERVE_GET_NEXT     ? CLI_START_OLDEST
                 : a.which == NERVE_GET_NEWEST ? CLI_START_NEWEST
                                               : CLI_START_HERE,
        .flags = a.which | (a.wait ? NERVE_F_WAIT : 0),
        .arg = a.arg,
        .timeout = a.wait ? a.timeout : 0,
        .count = 1,
        .fmt = a.fmt,
        .interrupt_ends = 0,
        .explain = explain,
    };
    return cli_read_run(&r);
}

const struct cli_verb cli_verb_get = {"get", "print one message", help, run};
