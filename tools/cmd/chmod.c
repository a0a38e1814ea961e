/* nerve chmod: set a channel's permission bits. */
#include "../cli.h"

#include <getopt.h>

static const char help[] =
    "usage: nerve chmod MODE NAME\n"
    "Set the permission bits (octal) of channel NAME. Readers need read\n"
    "permission, writers read and write.\n";

/* Options: --help only (cli_help_only). */

static int run(int argc, char **argv)
{
    int done = cli_help_only("chmod", argc, argv);
    if (done >= 0) {
        return done;
    }
    if (argc - optind != 2) {
        return cli_usage("chmod", argc - optind < 2 ? "missing MODE or NAME"
                                                    : "too many arguments");
    }
    uint32_t mode;
    if (cli_parse_mode(argv[optind], &mode) != 0) {
        return cli_usage("chmod", "bad mode '%s' (octal, e.g. 0640)",
                         argv[optind]);
    }
    const char *name = argv[optind + 1];
    if (cli_check_name("chmod", name) != 0) {
        return CLI_USAGE;
    }
    /* Only a valid channel is touched: nerve_chan_stat_name validates the header. */
    struct nerve_stats st;
    int rc = nerve_chan_stat_name(name, &st);
    if (rc != 0) {
        return cli_err("chmod", name, rc);
    }
    rc = nerve_chan_chmod(name, mode);
    if (rc != 0) {
        return cli_err("chmod", name, rc);
    }
    return CLI_OK;
}

const struct cli_verb cli_verb_chmod = {
    "chmod", "change a channel's permission bits", help, run};
