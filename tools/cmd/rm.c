/* nerve rm: remove channels. */
#include "../cli.h"

#include <getopt.h>
#include <sys/stat.h>

static const char help[] =
    "usage: nerve rm [--force] NAME...\n"
    "Remove channels (the channel file and its bell). Handles already open\n"
    "keep working until closed, on the removed file: a channel re-created\n"
    "under the same name gets nothing from them. So rm names the processes\n"
    "that still have a channel open (from /proc, as 'nerve who') and removes\n"
    "a channel that a writer has open only with --force. A bell left without\n"
    "its channel (an orphan of a killed create or rm) is removed too. Every\n"
    "NAME is tried; exit 1 if any failed or was refused.\n"
    "  -f, --force   remove channels even while a writer has them open\n";

/* Options: --force, --help. */

#define MAX_HOLDERS 64

/* Print the processes holding NAME; returns whether a writer is among
 * them. */
static int report_holders(const char *name, int force)
{
    static struct cli_holder h[MAX_HOLDERS];
    size_t n = 0, hidden = 0;
    if (cli_holders(name, h, MAX_HOLDERS, &n, &hidden) != 0 || n == 0) {
        return 0;
    }
    int writers = 0;
    for (size_t i = 0; i < n; i++) {
        writers += h[i].writer;
    }
    const char *what = writers && !force ? "not removed" : "removed";
    cli_note("rm", "%s: %s; still open in %zu process%s:", name, what, n,
             n == 1 ? "" : "es");
    for (size_t i = 0; i < n; i++) {
        char esc[4 * sizeof h[i].command];
        fprintf(stderr, "  pid %ld (%s) %s\n", h[i].pid,
                h[i].command[0] ? cli_text_buf(esc, sizeof esc, h[i].command)
                                : "?",
                h[i].writer ? "may write" : "reads");
    }
    if (writers && !force) {
        cli_note("rm",
                 "%s: a writer has it open and would go on writing into the "
                 "removed file; stop it first, or 'nerve rm --force %s'",
                 name, name);
    }
    return writers != 0;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int force = 0, c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
        if (c == 'h') {
            return cli_print_help("rm");
        }
        if (c != 'f') {
            return cli_bad_option("rm", argc, argv);
        }
        force = 1;
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
        if (report_holders(argv[i], force) && !force) {
            status = CLI_FAIL;
            continue;
        }
        /* With no channel, nerve_chan_unlink() removes an orphaned bell
         * and still says NERVE_ENOENT: the name is clean, say so. */
        char bell[NERVE_PATH_MAX];
        struct stat bst;
        int had_bell =
            nerve_chan_path(argv[i], NERVE_PATH_BELL, bell, sizeof bell) == 0 &&
            lstat(bell, &bst) == 0 && S_ISREG(bst.st_mode);
        int rc = nerve_chan_unlink(argv[i]);
        if (rc == NERVE_ENOENT && had_bell && lstat(bell, &bst) != 0) {
            cli_note("rm", "%s: no channel; removed its orphaned bell",
                     argv[i]);
        } else if (rc == NERVE_EACCES || rc == NERVE_EPERM) {
            /* /dev/shm is sticky: neither the file's mode nor 'nerve
             * chmod' lets anyone else remove it (the usual EACCES hint). */
            char path[NERVE_PATH_MAX], owner[32] = "", esc[256];
            struct stat st;
            if (nerve_chan_path(argv[i], 0, path, sizeof path) == 0 &&
                stat(path, &st) == 0) {
                snprintf(owner, sizeof owner, " (uid %u)", (unsigned)st.st_uid);
            }
            status = cli_fail("rm",
                              "%s: %s: only the file's owner%s or root may "
                              "remove it from /dev/shm, whatever its mode",
                              cli_text_buf(esc, sizeof esc, argv[i]),
                              nerve_err_name(rc), owner);
        } else if (rc != 0) {
            status = cli_err("rm", argv[i], rc);
        }
    }
    return status;
}

const struct cli_verb cli_verb_rm = {"rm", "remove channels", help, run};
