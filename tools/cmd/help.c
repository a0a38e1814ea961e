/* nerve help: list the verbs (and the external nerve-VERB programs found
 * beside nerve and on the PATH), or show one verb's help. */
#include "../cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>

static const char help[] =
    "usage: nerve help [VERB]\n"
    "List the verbs (and external nerve-VERB programs), or show one verb's\n"
    "help.\n";

/* Options: --help (-h) only, checked by hand: operands may be anything. */

/* The external verbs nerve ships (nerve-cyclic and nerve-ach with the
 * command, nerve-ros2-dds beside it when Cyclone DDS is found, the rest in
 * python-tools), with their one-line summaries: the one source of the
 * lines `nerve help` prints, which the man page (tools/man/gen-man.py) and
 * the shell completions read. A nerve-VERB found on the PATH that is not
 * listed here is shown by name alone. `from` is where the source tree
 * builds it ("tools": python-tools, "nerve": the C build), `pkg` the
 * Debian package that carries a C one in a packaged install
 * (NERVE_PACKAGED, the build of `make package`). */
static const struct {
    const char *name, *summary, *from, *pkg;
} known[] = {
    {"ach", "Ach's ach tool on nerve channels", "nerve", "nerve-ach"},
    {"blackbox", "flight recorder: channels' recent past to MCAP on a trigger",
     "tools", NULL},
    {"bridge", "mirror channels to other hosts over Zenoh", "tools", NULL},
    {"bw", "bandwidth of channels", "tools", NULL},
    {"cyclic", "real-time jitter test of a periodic loop", "nerve", "nerve"},
    {"delay", "latency from commit to receipt", "tools", NULL},
    {"echo", "print messages decoded by their encoding", "tools", NULL},
    {"foxglove", "Foxglove WebSocket bridge", "tools", NULL},
    {"graph", "processes and channels as a DOT or SVG graph", "tools", NULL},
    {"hz", "message rate of channels", "tools", NULL},
    {"play", "replay MCAP files into channels", "tools", NULL},
    {"plot", "figures from nerve bench and nerve cyclic JSON", "tools", NULL},
    {"pub", "publish messages encoded from text", "tools", NULL},
    {"record", "record channels to MCAP", "tools", NULL},
    {"ros1", "bridge channels and ROS 1 topics", "tools", NULL},
    {"ros2",
     "bridge channels and ROS 2 topics; 'ros2 exec' runs ROS 2 nodes on nerve",
     "tools", NULL},
    {"ros2-dds", "the DDS data path that 'nerve ros2' starts (Cyclone DDS)",
     "nerve", "nerve-ros2-dds"},
    {"ros2-exec", "run a ROS 2 program on rmw_nerve_cpp ('nerve ros2 exec')",
     "tools", NULL},
    {"top", "live monitor of channels", "tools", NULL},
    {"who", "which processes read or write a channel", "tools", NULL},
};

/* How to install external verb known[i]: in a packaged install the
 * package that carries it, in a source tree the way to build it. */
static const char *install_hint(size_t i)
{
#ifdef NERVE_PACKAGED
    static char hint[96];
    if (strcmp(known[i].from, "tools") == 0) {
        return "install the nerve-tools Python package";
    }
    snprintf(hint, sizeof hint, "install the Debian package %s", known[i].pkg);
    return hint;
#else
    return strcmp(known[i].from, "tools") == 0 ? "pip install ./python-tools"
                                               : "build or install nerve";
#endif
}

const char *cli_external_known(size_t i, const char **how)
{
    if (i >= sizeof known / sizeof known[0]) {
        return NULL;
    }
    if (how != NULL) {
        *how = install_hint(i);
    }
    return known[i].name;
}

/* Collect external verbs from one directory into names[] (deduplicated). */
static void scan_dir(const char *dir, char names[][64], size_t *n, size_t max)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < max) {
        if (strncmp(e->d_name, "nerve-", 6) != 0 || e->d_name[6] == '\0' ||
            strlen(e->d_name + 6) >= 64) {
            continue;
        }
        char path[PATH_MAX];
        int w = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (w < 0 || (size_t)w >= sizeof path || !cli_is_exec(path)) {
            continue;
        }
        const char *v = e->d_name + 6;
        int dup = 0;
        for (size_t i = 0; i < *n && !dup; i++) {
            dup = strcmp(names[i], v) == 0;
        }
        for (size_t i = 0; i < cli_nverbs && !dup; i++) {
            dup = strcmp(cli_verbs[i]->name, v) == 0;
        }
        if (!dup) {
            snprintf(names[(*n)++], 64, "%s", v);
        }
    }
    closedir(d);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void list_external(FILE *f)
{
    static char names[256][64];
    size_t n = 0;
    char dir[PATH_MAX];
    cli_self_dir(dir, sizeof dir);
    if (dir[0]) {
        scan_dir(dir, names, &n, 256);
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(dir, sizeof dir, "%.*s", (int)len, len ? path : ".");
        scan_dir(dir, names, &n, 256);
        path = colon ? colon + 1 : NULL;
    }
    /* The shipped verbs not found still get their line, saying so. */
    size_t found = n;
    for (size_t k = 0; k < sizeof known / sizeof known[0] && n < 256; k++) {
        int have = 0;
        for (size_t i = 0; i < found && !have; i++) {
            have = strcmp(names[i], known[k].name) == 0;
        }
        if (!have) {
            snprintf(names[n++], 64, "%s", known[k].name);
        }
    }
    qsort(names, n, sizeof names[0], cmp_name);
    fputs("\nexternal verbs (nerve-VERB programs):\n", f);
    for (size_t i = 0; i < n; i++) {
        const char *summary = NULL;
        size_t which = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
            if (strcmp(names[i], known[k].name) == 0) {
                summary = known[k].summary;
                which = k;
            }
        }
        char exe[PATH_MAX];
        int here = cli_find_external(names[i], exe, sizeof exe) == 0;
        if (summary == NULL) {
            fprintf(f, "  %s\n", names[i]);
        } else if (here) {
            fprintf(f, "  %-9s %s\n", names[i], summary);
        } else {
            fprintf(f, "  %-9s %s (not installed: %s)\n", names[i], summary,
                    install_hint(which));
        }
    }
}

void cli_usage_all(FILE *f)
{
    fputs("usage: nerve VERB [ARGS]   (nerve VERB --help for a verb's help)\n"
          "Real-time IPC channels in shared memory.\n\nverbs:\n",
          f);
    for (size_t i = 0; i < cli_nverbs; i++) {
        fprintf(f, "  %-8s %s\n", cli_verbs[i]->name, cli_verbs[i]->summary);
    }
}

static int run(int argc, char **argv)
{
    if (argc >= 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        return cli_print_help("help");
    }
    if (argc > 2) {
        return cli_usage("help", "too many arguments");
    }
    if (argc == 2) {
        if (cli_print_help(argv[1]) == CLI_OK) {
            return CLI_OK;
        }
        if (argv[1][0] == '-' || strchr(argv[1], '/') != NULL) {
            return cli_usage("help", "'%s' is not a nerve verb", argv[1]);
        }
        char path[PATH_MAX];
        if (cli_find_external(argv[1], path, sizeof path) == 0) {
            execl(path, path, "--help", (char *)NULL);
            return cli_fail("help", "%s: %s", path, strerror(errno));
        }
        return cli_usage("help", "'%s' is not a nerve verb", argv[1]);
    }
    cli_usage_all(stdout);
    list_external(stdout);
    return CLI_OK;
}

const struct cli_verb cli_verb_help = {"help", "show help", help, run};
