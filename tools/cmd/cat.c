/* nerve cat: print messages as they arrive. The reading itself is
 * cli_read_run(), shared with nerve get. */
#include "../cli.h"

#include <getopt.h>

static const char help[] =
    "usage: nerve cat NAME [--newest] [--all] [--count N] [--timeout SEC]\n"
    "                      [--format raw|hex|text|json]\n"
    "Print messages as they arrive, until interrupted (Ctrl-C) or N messages.\n"
    "  --newest         print only the newest message at each wake-up\n"
    "                   (skip what arrived meanwhile)\n"
    "  --all            start with the oldest message still in the channel\n"
    "                   (default: only messages published from now on)\n"
    "  --count N        stop after N messages\n"
    "  --timeout SEC    stop (exit 1) if no message arrives for SEC seconds;\n"
    "                   a missing channel is waited for that long to be\n"
    "                   created (then read from its first message)\n"
    "  --format F       as for 'nerve get' (default text)\n";

static const struct option opts[] = {
    {"newest", no_argument, NULL, 'N'},
    {"all", no_argument, NULL, 'a'},
    {"count", required_argument, NULL, 'c'},
    {"timeout", required_argument, NULL, 't'},
    {"format", required_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int run(int argc, char **argv)
{
    int newest = 0, all = 0, c;
    uint64_t count = 0;
    int64_t timeout = NERVE_FOREVER;
    enum cli_fmt fmt = CLI_FMT_TEXT;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'N': newest = 1; break;
        case 'a': all = 1; break;
        case 'c':
            if (cli_parse_u64(optarg, &count) != 0 || count == 0) {
                return cli_usage("cat", "bad --count '%s'", optarg);
            }
            break;
        case 't':
            if (cli_seconds_to_ns("cat", optarg, &timeout) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'f':
            if (cli_parse_format("cat", optarg, &fmt) != 0) {
                return CLI_USAGE;
            }
            break;
        case 'h': return cli_print_help("cat");
        default: return cli_bad_option("cat", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("cat", optind >= argc ? "missing NAME"
                                               : "too many arguments");
    }
    /* By default follow from now; --all from the oldest present, which is
     * not preceded by a loss. */
    struct cli_read r = {
        .verb = "cat",
        .name = argv[optind],
        .start = all ? CLI_START_OLDEST : CLI_START_AFTER_NEWEST,
        .flags = (newest ? NERVE_GET_NEWEST : NERVE_GET_NEXT) | NERVE_F_WAIT,
        .arg = 0,
        .timeout = timeout,
        .count = count,
        .fmt = fmt,
        .interrupt_ends = 1,
        .explain = NULL,
    };
    return cli_read_run(&r);
}

const struct cli_verb cli_verb_cat = {"cat", "print messages as they arrive",
                                      help, run};
