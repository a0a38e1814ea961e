/* nerve rm: remove channels. */
#include "../cli.h"

#include <getopt.h>

static const char help[] =
    "usage: nerve rm NAME...\n"
    "Remove channels (the channel file and its bell). Handles already open\n"
    "keep working until closed. Every NAME is tried; exit 1 if any failed.\n";

/* Options: --help only (cli_help_only). */

static int run(int argc, char **argv)
{
    int done = cli_help_only("rm", argc, argv);
    if (done >= 0) {
        return done;
    }
    if (optind >= argc) {
        return cli_usage("rm", "missing NAME");
    }
    int status = CLI_OK;
    for (int i = optind; i < argc; i++) {
        if (cli_check_name("rm", argv[i]) != 0) {
            status = CLI_USAGE;
            continue;
        }
        int rc = nerve_chan_unlink(argv[i]);
        if (rc != 0) {
            status = cli_err("rm", argv[i], rc);
        }
    }
    return status;
}

const struct cli_verb cli_verb_rm = {"rm", "remove channels", help, run};
