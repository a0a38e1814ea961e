/* The `nerve` command: one binary, one verb per job (as ach's achtool and
 * git do). A verb it does not know, VERB, runs the program `nerve-VERB`,
 * looked up first beside this executable and then on the PATH, so tools
 * written in other languages appear as verbs of the same command. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HELP_CREATE                                                             \
    "usage: nerve create NAME [--slots N] [--size BYTES] [--mode OCTAL]\n"      \
    "                         [--type T] [--encoding E] [--schema FILE]\n"      \
    "                         [--exist-ok]\n"                                   \
    "Create channel NAME (/dev/shm/nerve.NAME) and print the memory it\n"     \
    "committed.\n"                                                              \
    "  --slots N        index ring entries (default 1024)\n"                    \
    "  --size BYTES     data ring bytes, also the largest message; suffixes\n"  \
    "                   K, M, G (default 1M). The channel is a file in\n"       \
    "                   /dev/shm, i.e. memory, committed when it is created:\n" \
    "                   --size 8G takes 8 GB of RAM at once. Sizes larger\n"    \
    "                   than the free space of /dev/shm are refused.\n"         \
    "  --mode OCTAL     permission bits (default 0644)\n"                       \
    "  --type T         type name recorded in the metadata\n"                   \
    "  --encoding E     encoding (raw, cdr, ros1msg, protobuf, json, ...)\n"    \
    "  --schema FILE    schema text read from FILE ('-': standard input)\n"     \
    "  --exist-ok       succeed if an equal channel exists already\n"

#define HELP_RM                                                                 \
    "usage: nerve rm NAME...\n"                                                 \
    "Remove channels (the channel file and its bell). Handles already open\n"  \
    "keep working until closed. Every NAME is tried; exit 1 if any failed.\n"

#define HELP_LS                                                                 \
    "usage: nerve ls [PATTERN...] [--json] [--watch [--interval SEC]\n"        \
    "                [--count N]]\n"                                           \
    "List channels: slots, data size, messages present, bytes published, age\n" \
    "of the newest message and type. Channels that cannot be opened are\n"      \
    "listed with the error. PATTERNs are shell globs (quote them): only the\n"  \
    "channels matching one are listed.\n"                                       \
    "  --json           one JSON array (fields in docs/cli.md)\n"              \
    "  --watch          list again every --interval SEC (default 1) until\n"   \
    "                   Ctrl-C, or --count N listings\n"             \
    "  --remote ...     the channels exported on the Zenoh network, by\n"     \
    "                   nerve-bridge ls (docs/bridge.md)\n"

#define HELP_INFO                                                               \
    "usage: nerve info NAME [--json]\n"                                         \
    "Show a channel's header: layout and creator version, geometry, counters,\n" \
    "newest message, creation time, permissions and metadata.\n"                \
    "  --json           one JSON object (fields in docs/cli.md)\n"

#define HELP_PUT                                                                \
    "usage: nerve put NAME [DATA] [--lines] [--timeout SEC]\n"                  \
    "Publish DATA, or all of standard input, as one message.\n"                 \
    "  --lines          one message per line of input (without the newline)\n" \
    "  --timeout SEC    longest wait for the writer lock (default: forever)\n"  \
    "  --json           print {\"seq\":N,\"time_ns\":T} per message\n"

#define HELP_GET                                                                \
    "usage: nerve get NAME [--newest|--next|--seq N|--at TIME] [--wait]\n"      \
    "                      [--timeout SEC] [--format raw|hex|text|json]\n"      \
    "Print one message.\n"                                                      \
    "  --newest         the newest message (default)\n"                         \
    "  --next           the oldest message still in the channel\n"              \
    "  --seq N          the message with sequence number N\n"                   \
    "  --at TIME        the newest message committed at or before TIME:\n"      \
    "                   CLOCK_MONOTONIC nanoseconds (as in time_ns), or\n"      \
    "                   relative to now with a unit: -1.5s, -200ms, -30us\n"    \
    "  --wait           wait for a message if there is none (--newest,\n"       \
    "                   --next, --seq)\n"                                       \
    "  --timeout SEC    with --wait: give up after SEC seconds (exit 1)\n"      \
    "  --format F       raw (bytes as they are), hex (dump), text (bytes and\n" \
    "                   a newline; default), json (one object: seq, time,\n"    \
    "                   time_ns, size, missed, text or base64)\n"

#define HELP_CAT                                                                \
    "usage: nerve cat NAME [--newest] [--all] [--count N] [--timeout SEC]\n"    \
    "                      [--format raw|hex|text|json]\n"                      \
    "Print messages as they arrive, until interrupted (Ctrl-C) or N messages.\n" \
    "  --newest         print only the newest message at each wake-up\n"        \
    "                   (skip what arrived meanwhile)\n"                        \
    "  --all            start with the oldest message still in the channel\n"  \
    "                   (default: only messages published from now on)\n"      \
    "  --count N        stop after N messages\n"                                \
    "  --timeout SEC    stop (exit 1) if no message arrives for SEC seconds\n"  \
    "  --format F       as for 'nerve get' (default text)\n"

#define HELP_CHMOD                                                              \
    "usage: nerve chmod MODE NAME\n"                                            \
    "Set the permission bits (octal) of channel NAME. Readers need read\n"     \
    "permission, writers read and write.\n"

#define HELP_CHECK                                                              \
    "usage: nerve check [--repair [--force]] NAME...\n"                         \
    "Verify every invariant of channel files that can be checked without\n"   \
    "the writer lock, and show the writer lock's state (free, held by a\n"    \
    "live thread, owner dead). Prints NAME: ok ... for each consistent one;\n" \
    "otherwise says what is wrong. Every NAME is checked; exit 1 if any\n"    \
    "failed.\n"                                                              \
    "  --repair  first reset a writer lock whose owner cannot be alive (a\n"  \
    "            thread that does not exist); needs write permission\n"      \
    "  --force   with --repair: reset it even if the named thread lives\n"   \
    "            (only when no writer can be inside a put)\n"

#define HELP_HELP                                                               \
    "usage: nerve help [VERB]\n"                                                \
    "List the verbs (and external nerve-VERB programs), or show one verb's\n"  \
    "help.\n"

/* The bench help text lives with the benchmark (bench/bench.h). */
#include "../bench/bench.h"

const struct cli_verb cli_verbs[] = {
    {"create", "create a channel", HELP_CREATE, cli_create},
    {"rm", "remove channels", HELP_RM, cli_rm},
    {"ls", "list channels", HELP_LS, cli_ls},
    {"info", "show a channel's header, counters and metadata", HELP_INFO,
     cli_info},
    {"put", "publish a message", HELP_PUT, cli_put},
    {"get", "print one message", HELP_GET, cli_get},
    {"cat", "print messages as they arrive", HELP_CAT, cli_cat},
    {"chmod", "change a channel's permission bits", HELP_CHMOD, cli_chmod},
    {"check", "verify a channel file", HELP_CHECK, cli_check},
    {"bench", "latency and throughput benchmark", BENCH_HELP, cli_bench},
    {"help", "show help", HELP_HELP, cli_help},
};
const size_t cli_nverbs = sizeof cli_verbs / sizeof cli_verbs[0];

int cli_bench(int argc, char **argv)
{
    return bench_main(argc, argv);
}

static void usage_all(FILE *f)
{
    fputs("usage: nerve VERB [ARGS]   (nerve VERB --help for a verb's help)\n"
          "Real-time IPC channels in shared memory.\n\nverbs:\n", f);
    for (size_t i = 0; i < cli_nverbs; i++) {
        fprintf(f, "  %-8s %s\n", cli_verbs[i].name, cli_verbs[i].summary);
    }
}

/* Directory of this executable (from /proc/self/exe), or "" if unknown. */
static void self_dir(char *out, size_t len)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    out[0] = '\0';
    if (n <= 0) {
        return;
    }
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL) {
        return;
    }
    *slash = '\0';
    snprintf(out, len, "%s", buf[0] ? buf : "/");
}

static int is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, X_OK) == 0;
}

/* Find nerve-VERB: beside this executable, then on the PATH. */
static int find_external(const char *verb, char *out, size_t len)
{
    char dir[PATH_MAX];
    self_dir(dir, sizeof dir);
    if (dir[0]) {
        int w = snprintf(out, len, "%s/nerve-%s", dir, verb);
        if (w > 0 && (size_t)w < len && is_exec(out)) {
            return 0;
        }
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        int w = n == 0 ? snprintf(out, len, "./nerve-%s", verb)
                       : snprintf(out, len, "%.*s/nerve-%s", (int)n, path,
                                  verb);
        if (w > 0 && (size_t)w < len && is_exec(out)) {
            return 0;
        }
        path = colon ? colon + 1 : NULL;
    }
    return -1;
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
        if (w < 0 || (size_t)w >= sizeof path || !is_exec(path)) {
            continue;
        }
        const char *v = e->d_name + 6;
        int dup = 0;
        for (size_t i = 0; i < *n && !dup; i++) {
            dup = strcmp(names[i], v) == 0;
        }
        for (size_t i = 0; i < cli_nverbs && !dup; i++) {
            dup = strcmp(cli_verbs[i].name, v) == 0;
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
    self_dir(dir, sizeof dir);
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
    if (n == 0) {
        return;
    }
    qsort(names, n, sizeof names[0], cmp_name);
    fputs("\nexternal verbs (nerve-VERB programs):\n", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "  %s\n", names[i]);
    }
}

int cli_help(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                      strcmp(argv[1], "-h") == 0)) {
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
        if (find_external(argv[1], path, sizeof path) == 0) {
            execl(path, path, "--help", (char *)NULL);
            fprintf(stderr, "nerve help: %s: %s\n", path, strerror(errno));
            return CLI_FAIL;
        }
        return cli_usage("help", "'%s' is not a nerve verb", argv[1]);
    }
    usage_all(stdout);
    list_external(stdout);
    return CLI_OK;
}

int cli_exec_external(const char *tool, const char *sub, int argc,
                      char **argv)
{
    char path[PATH_MAX], name[80];
    if (find_external(tool, path, sizeof path) != 0) {
        fprintf(stderr,
                "nerve %s: needs nerve-%s (pip install ./python "
                "./python-tools), found neither beside nerve nor on the "
                "PATH\n",
                argv[0], tool);
        return CLI_FAIL;
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "nerve %s: out of memory\n", argv[0]);
        return CLI_FAIL;
    }
    snprintf(name, sizeof name, "nerve-%s", tool);
    args[0] = name;
    args[1] = (char *)sub;
    for (int i = 1; i < argc; i++) {
        args[i + 1] = argv[i];
    }
    execv(path, args);
    fprintf(stderr, "nerve %s: cannot run %s: %s\n", argv[0], path,
            strerror(errno));
    free(args);
    return CLI_FAIL;
}

/* A verb whose output could not be written (a full disk, a closed pipe)
 * has failed, whatever it returned. */
static int output_ok(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "nerve: cannot write the output: %s\n",
                strerror(errno));
        return rc == CLI_OK ? CLI_FAIL : rc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage_all(stderr);
        return CLI_USAGE;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
        return cli_help(1, argv + 1);
    }
    if (strcmp(verb, "--version") == 0) {
        printf("nerve %d.%d.%d (layout %d)\n", NERVE_VERSION_MAJOR,
               NERVE_VERSION_MINOR, NERVE_VERSION_PATCH, NERVE_LAYOUT_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < cli_nverbs; i++) {
        if (strcmp(cli_verbs[i].name, verb) == 0) {
            return output_ok(cli_verbs[i].run(argc - 1, argv + 1));
        }
    }
    if (verb[0] == '-' || strchr(verb, '/') != NULL) {
        fprintf(stderr, "nerve: unknown option or verb '%s'\n", verb);
        usage_all(stderr);
        return CLI_USAGE;
    }
    char path[PATH_MAX];
    if (find_external(verb, path, sizeof path) != 0) {
        fprintf(stderr,
                "nerve: '%s' is not a nerve verb and no nerve-%s was found "
                "beside nerve or on the PATH; see 'nerve help'\n",
                verb, verb);
        return CLI_USAGE;
    }
    /* argv[1] becomes the program name, as git passes it. */
    char name[80];
    snprintf(name, sizeof name, "nerve-%s", verb);
    argv[1] = name;
    execv(path, argv + 1);
    fprintf(stderr, "nerve: cannot run %s: %s\n", path, strerror(errno));
    return CLI_FAIL;
}
