/* External verbs (declared in tools/cli.h): finding nerve-VERB beside
 * this executable or on the PATH, and running it. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_self_dir(char *out, size_t len)
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

int cli_is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, X_OK) == 0;
}

int cli_find_external(const char *verb, char *out, size_t len)
{
    char dir[PATH_MAX];
    cli_self_dir(dir, sizeof dir);
    if (dir[0]) {
        int w = snprintf(out, len, "%s/nerve-%s", dir, verb);
        if (w > 0 && (size_t)w < len && cli_is_exec(out)) {
            return 0;
        }
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        int w = n == 0
                    ? snprintf(out, len, "./nerve-%s", verb)
                    : snprintf(out, len, "%.*s/nerve-%s", (int)n, path, verb);
        if (w > 0 && (size_t)w < len && cli_is_exec(out)) {
            return 0;
        }
        path = colon ? colon + 1 : NULL;
    }
    return -1;
}

int cli_exec_external(const char *tool, const char *sub, int argc, char **argv)
{
    char path[PATH_MAX], name[80];
    if (cli_find_external(tool, path, sizeof path) != 0) {
        const char *ext, *how = "build or install nerve";
        for (size_t i = 0; (ext = cli_external_known(i, NULL)) != NULL; i++) {
            if (strcmp(ext, tool) == 0) {
                (void)cli_external_known(i, &how);
            }
        }
        return cli_fail(argv[0],
                        "needs nerve-%s (%s), found neither beside nerve nor "
                        "on the PATH",
                        tool, how);
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (args == NULL) {
        return cli_fail(argv[0], "out of memory");
    }
    snprintf(name, sizeof name, "nerve-%s", tool);
    args[0] = name;
    args[1] = (char *)sub;
    for (int i = 1; i < argc; i++) {
        args[i + 1] = argv[i];
    }
    execv(path, args);
    int err = errno;
    free(args);
    return cli_fail(argv[0], "cannot run %s: %s", path, strerror(err));
}
