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
    int64_t arg = r->arg;
    uint64_t tail = st.tail_seq ? st.tail_seq : 1;
    if (st.head_seq == 0) {
        fprintf(stderr, "nerve get: %s: %s: the channel has no message yet\n",
                name, code);
    } else if (which == NERVE_GET_SEQ && rc == NERVE_EAGAIN) {
        fprintf(stderr,
                "nerve get: %s: %s: message %" PRId64 " is not "
                "published yet (the newest is %" PRIu64 "; --wait "
                "waits for it)\n",
                name, code, arg, st.head_seq);
    } else if (which == NERVE_GET_SEQ) {
        fprintf(stderr,
                "nerve get: %s: %s: message %" PRId64 " was "
                "overwritten (present: %" PRIu64 " to %" PRIu64 ")\n",
                name, code, arg, tail, st.head_seq);
    } else {
        struct nerve_get_info oi;
        char b;
        int64_t oldest = -1;
        int e = nerve_chan_get(ch, &b, 0, (int64_t)tail, 0, &oi, NERVE_GET_SEQ);
        if (e == 0 || e == NERVE_EMSGSIZE) {
            oldest = oi.time_ns;
        }
        if (oldest >= 0) {
            char iso[64];
            iso8601(iso, sizeof iso, nerve_clock_to_realtime_ns(oldest));
            fprintf(stderr,
                    "nerve get: %s: %s: no message committed at or "
                    "before %" PRId64 " ns: the oldest present (seq %" PRIu64
                    ") was committed at %" PRId64 " ns (%s)\n",
                    name, code, arg, tail, oldest, iso);
        } else {
            fprintf(stderr,
                    "nerve get: %s: %s: no message committed at or "
                    "before %" PRId64 " ns is still present\n",
                    name, code, arg);
        }
    }
    return CLI_FAIL;
}

static int run(int argc, char **argv)
{
    uint32_t which = NERVE_GET_NEWEST;
    int nwhich = 0, wait = 0, c;
    int64_t arg = 0, timeout = NERVE_FOREVER;
    int have_timeout = 0;
    const char *at = NULL;
    enum cli_fmt fmt = CLI_FMT_TEXT;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'N':
            which = NERVE_GET_NEWEST;
            nwhich++;
            break;
        case 'n':
            which = NERVE_GET_NEXT;
            nwhich++;
            break;
        case 's': {
            uint64_t v;
            if (cli_parse_u64(optarg, &v) != 0 || v == 0 || v > INT64_MAX) {
                return cli_usage("get", "bad --seq '%s'", optarg);
            }
            which = NERVE_GET_SEQ;
            arg = (int64_t)v;
            nwhich++;
            break;
        }
        case 'a':
            at = optarg;
            which = NERVE_GET_AT;
            nwhich++;
            break;
        case 'w': wait = 1; break;
        case 't':
            if (cli_seconds_to_ns("get", optarg, &timeout) != 0) {
                return CLI_USAGE;
            }
            have_timeout = 1;
            break;
        case 'f':
            if (cli_parse_format("get", optarg, &fmt) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("get");
        default: return cli_bad_option("get", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("get", optind >= argc ? "missing NAME"
                                               : "too many arguments");
    }
    if (nwhich > 1) {
        return cli_usage("get", "give at most one of --newest, --next, --seq, "
                                "--at");
    }
    if (wait && which == NERVE_GET_AT) {
        return cli_usage("get", "--wait does not apply to --at");
    }
    if (have_timeout && !wait) {
        return cli_usage("get", "--timeout needs --wait");
    }
    if (at != NULL && cli_parse_time(at, nerve_clock_now_ns(), &arg) != 0) {
        return cli_usage("get",
                         "bad --at '%s' (nanoseconds, or -1.5s, "
                         "-200ms, -30us)",
                         at);
    }
    /* "missed" counts what this reader could have had and lost: a one-shot
     * get has no previous message, so the history before it is not loss
     * (--next: the oldest present; --newest: the newest present). */
    struct cli_read r = {
        .verb = "get",
        .name = argv[optind],
        .start = which == NERVE_GET_NEXT     ? CLI_START_OLDEST
                 : which == NERVE_GET_NEWEST ? CLI_START_NEWEST
                                             : CLI_START_HERE,
        .flags = which | (wait ? NERVE_F_WAIT : 0),
        .arg = arg,
        .timeout = wait ? timeout : 0,
        .count = 1,
        .fmt = fmt,
        .interrupt_ends = 0,
        .explain = explain,
    };
    return cli_read_run(&r);
}

const struct cli_verb cli_verb_get = {"get", "print one message", help, run};
