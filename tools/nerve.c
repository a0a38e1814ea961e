/* The `nerve` command: one binary, one verb per job (as ach's achtool and
 * git do). This file only dispatches: each built-in verb is in
 * tools/cmd/VERB.c with its help text and options, the helpers they share
 * in tools/cli_util.c. A verb it does not know, VERB, runs the program
 * `nerve-VERB`, looked up first beside this executable and then on the
 * PATH, so tools written in other languages appear as verbs of the same
 * command. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

/* The order of `nerve help`. */
const struct cli_verb *const cli_verbs[] = {
    &cli_verb_create, &cli_verb_rm,    &cli_verb_ls,   &cli_verb_info,
    &cli_verb_put,    &cli_verb_get,   &cli_verb_cat,  &cli_verb_chmod,
    &cli_verb_check,  &cli_verb_bench, &cli_verb_help,
};
const size_t cli_nverbs = sizeof cli_verbs / sizeof cli_verbs[0];

/* Edit distance of a and b (insertions, deletions, substitutions), capped
 * at 3: enough to suggest "get" for "gett" or "gt". */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32) {
        return 3;
    }
    int row[33];
    for (size_t j = 0; j <= lb; j++) {
        row[j] = (int)j;
    }
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb] < 3 ? row[lb] : 3;
}

/* The verb closest to `verb` (at most 2 edits), built-in or one of the
 * external verbs nerve ships, or NULL. */
static const char *nearest_verb(const char *verb)
{
    const char *best = NULL, *ext;
    int d = 3;
    for (size_t i = 0; i < cli_nverbs; i++) {
        int e = distance(verb, cli_verbs[i]->name);
        if (e < d) {
            d = e;
            best = cli_verbs[i]->name;
        }
    }
    for (size_t i = 0; (ext = cli_external_known(i, NULL)) != NULL; i++) {
        int e = distance(verb, ext);
        if (e < d) {
            d = e;
            best = ext;
        }
    }
    return best;
}

/* How to install `verb` if it is an external verb nerve ships, or NULL. */
static const char *shipped_how(const char *verb)
{
    const char *ext, *how;
    for (size_t i = 0; (ext = cli_external_known(i, &how)) != NULL; i++) {
        if (strcmp(ext, verb) == 0) {
            return how;
        }
    }
    return NULL;
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
        cli_usage_all(stderr);
        return CLI_USAGE;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
        return cli_verb_help.run(1, argv + 1);
    }
    if (strcmp(verb, "--version") == 0) {
        printf("nerve %d.%d.%d (layout %d)\n", NERVE_VERSION_MAJOR,
               NERVE_VERSION_MINOR, NERVE_VERSION_PATCH, NERVE_LAYOUT_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < cli_nverbs; i++) {
        if (strcmp(cli_verbs[i]->name, verb) == 0) {
            return output_ok(cli_verbs[i]->run(argc - 1, argv + 1));
        }
    }
    if (verb[0] == '-' || strchr(verb, '/') != NULL) {
        fprintf(stderr, "nerve: unknown option or verb '%s'\n", verb);
        cli_usage_all(stderr);
        return CLI_USAGE;
    }
    char path[PATH_MAX];
    if (cli_find_external(verb, path, sizeof path) != 0) {
        const char *near = nearest_verb(verb), *how = shipped_how(verb);
        if (how != NULL) {
            fprintf(stderr,
                    "nerve: '%s' is a verb of nerve's that is not installed "
                    "here (nerve-%s was not found beside nerve or on the "
                    "PATH): %s\n",
                    verb, verb, how);
            return CLI_USAGE;
        }
        if (near != NULL) {
            fprintf(stderr,
                    "nerve: '%s' is not a nerve verb; did you mean '%s'? "
                    "(see 'nerve help')\n",
                    verb, near);
            return CLI_USAGE;
        }
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
