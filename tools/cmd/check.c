/* nerve check: verify channel files, optionally repair a dead writer lock. */
#include "../cli.h"

#include <getopt.h>
#include <string.h>

static const char help[] =
    "usage: nerve check [--repair [--force]] NAME...\n"
    "Verify every invariant of channel files that can be checked without\n"
    "the writer lock, and show the writer lock's state (free, held by a\n"
    "live thread, owner dead). Prints NAME: ok ... for each consistent one;\n"
    "otherwise says what is wrong. Every NAME is checked; exit 1 if any\n"
    "failed.\n"
    "  --repair  first reset a writer lock whose owner cannot be alive (a\n"
    "            thread that does not exist); needs write permission\n"
    "  --force   with --repair: reset it even if the named thread lives\n"
    "            (only when no writer can be inside a put)\n";

static const struct option opts[] = {
    {"repair", no_argument, NULL, 'r'},
    {"force", no_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int run(int argc, char **argv)
{
    int repair = 0, force = 0, c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': repair = 1; break;
        case 'f': force = 1; break;
        case 'h': return cli_print_help("check");
        default: return cli_bad_option("check", argc, argv);
        }
    }
    if (force && !repair) {
        return cli_usage("check", "--force needs --repair");
    }
    if (optind >= argc) {
        return cli_usage("check", "missing NAME");
    }
    /* Every NAME is checked (as rm tries every NAME); the worst status. */
    int status = CLI_OK;
    for (int i = optind; i < argc; i++) {
        const char *name = argv[i];
        if (cli_check_name("check", name) != 0) {
            status = CLI_USAGE;
            continue;
        }
        char msg[512] = "";
        int rc;
        if (repair) {
            /* Opens for writing: only writers may repair. */
            rc = nerve_chan_repair(name, force ? NERVE_REPAIR_FORCE : 0, msg,
                                   sizeof msg);
            if (rc < 0) {
                status =
                    cli_fail("check", "%s: %s: %s%s", name, nerve_err_name(rc),
                             msg, rc == NERVE_EBUSY ? " (--force)" : "");
                continue;
            }
            printf("%s: %s\n", name, msg);
        }
        rc = nerve_chan_check(name, msg, sizeof msg);
        if (strcmp(msg, nerve_strerror(rc)) == 0) {
            msg[0] = '\0'; /* the explanation adds nothing to the message */
        }
        if (rc != 0) {
            int fail =
                cli_fail("check", "%s: %s: %s%s%s", name, nerve_err_name(rc),
                         nerve_strerror(rc), msg[0] ? ": " : "", msg);
            status = status == CLI_OK ? fail : status;
            continue;
        }
        /* "ok; writer lock: STATE", and why the bell is not used if not */
        printf("%s: %s\n", name, msg[0] ? msg : "ok");
    }
    return status;
}

const struct cli_verb cli_verb_check = {"check", "verify a channel file", help,
                                        run};
