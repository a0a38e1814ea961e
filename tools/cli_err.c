/* Errors and help of the verbs (declared in tools/cli.h): the one form of
 * a verb's message, "nerve VERB: ...", and the hints the command adds to
 * the library's details (the library describes the problem; only the
 * command knows its own verbs and flags). */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

/* What to do about code rc with this command, or NULL. */
static const char *cli_hint(int rc)
{
    switch (rc) {
    case NERVE_ENOENT:
        return "'nerve ls' lists channels, 'nerve create' makes one";
    case NERVE_EEXIST:
    case NERVE_EMISMATCH: return "'nerve rm NAME' removes it";
    case NERVE_EMSGSIZE: return "'nerve create --size' sets the data ring";
    case NERVE_EACCES: return "its owner may change it with 'nerve chmod'";
    default: return NULL;
    }
}

int cli_err(const char *verb, const char *what, int rc)
{
    char esc[256];
    const char *hint = cli_hint(rc);
    fprintf(stderr, "nerve %s: %s: %s: %s%s%s\n", verb,
            cli_text_buf(esc, sizeof esc, what), nerve_err_name(rc),
            nerve_err_detail(rc), hint ? "; " : "", hint ? hint : "");
    return CLI_FAIL;
}

static void say(const char *verb, const char *fmt, va_list ap)
{
    fprintf(stderr, "nerve %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_fail(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, fmt, ap);
    va_end(ap);
    return CLI_FAIL;
}

void cli_note(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, fmt, ap);
    va_end(ap);
}

int cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'nerve %s --help'.\n", verb);
    return CLI_USAGE;
}

int cli_print_help(const char *verb)
{
    for (size_t i = 0; i < cli_nverbs; i++) {
        if (strcmp(cli_verbs[i]->name, verb) == 0) {
            fputs(cli_verbs[i]->usage, stdout);
            return CLI_OK;
        }
    }
    return CLI_USAGE;
}
