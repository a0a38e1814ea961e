/* nerve rm: remove channels. */
#include "../cli.h"

#include <getopt.h>
#include <sys/stat.h>

static const char help[] =
    "usage: nerve rm NAME...\n"
    "Remove channels (the channel file and its bell). Handles already open\n"
    "keep working until closed. A bell left without its channel (an\n"
    "orphan of a killed create or rm) is removed too. Every NAME is tried;\n"
    "exit 1 if any failed.\n";

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
        /* With no channel, nerve_chan_unlink() removes an orphaned bell
         * and still says NERVE_ENOENT: the name is clean, say so. */
        char bell[64 + NERVE_NAME_MAX];
        struct stat bst;
        snprintf(bell, sizeof bell, "/dev/shm/nerve-bell.%s", argv[i]);
        int had_bell = lstat(bell, &bst) == 0 && S_ISREG(bst.st_mode);
        int rc = nerve_chan_unlink(argv[i]);
        if (rc == NERVE_ENOENT && had_bell && lstat(bell, &bst) != 0) {
            fprintf(stderr,
                    "nerve rm: %s: no channel; removed its orphaned "
                    "bell\n",
                    argv[i]);
        } else if (rc != 0) {
            status = cli_err("rm", argv[i], rc);
        }
    }
    return status;
}

const struct cli_verb cli_verb_rm = {"rm", "remove channels", help, run};
