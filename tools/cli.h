/* Shared pieces of the `nerve` command, one file a job: errors and help
 * (cli_err.c), option parsing (cli_opt.c), the size grammar (cli_size.c),
 * the reading run of get and cat (cli_read.c), text for a human and its
 * UTF-8 checks (cli_text.c), human-readable numbers (cli_human.c), JSON
 * output (cli_json.c), external nerve-VERB programs (cli_exec.c) and the
 * processes holding a channel (cli_holders.c). Each verb lives in
 * tools/cmd/VERB.c with its help text and option table; tools/nerve.c
 * dispatches. Everything here sits on the public API
 * (include/nerve/nerve.h) only. */
#ifndef NERVE_TOOLS_CLI_H
#define NERVE_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nerve/nerve.h>

#include "report.h"

/* Exit codes of every verb. */
#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

/* One verb: its name, a one-line summary, its --help text and its entry
 * point (argv[0] is the verb name). Defined in tools/cmd/VERB.c. */
struct cli_verb {
    const char *name;
    const char *summary;
    const char *usage;
    int (*run)(int argc, char **argv);
};

/* The built-in verbs in the order `nerve help` lists them (tools/nerve.c). */
extern const struct cli_verb *const cli_verbs[];
extern const size_t cli_nverbs;

extern const struct cli_verb cli_verb_create, cli_verb_rm, cli_verb_ls,
    cli_verb_info, cli_verb_put, cli_verb_get, cli_verb_cat, cli_verb_chmod,
    cli_verb_check, cli_verb_bench, cli_verb_help;

/* ---- errors and help (cli_err.c) ---------------------------------------- */

/* Print "nerve VERB: what: CODE: detail" for a nerve error code to stderr,
 * the library's detail followed by the command's hint for the code where
 * it has one ("; 'nerve rm NAME' removes it"), and return CLI_FAIL. */
int cli_err(const char *verb, const char *what, int rc);
/* Print "nerve VERB: message" (printf-style) to stderr and return
 * CLI_FAIL: every failure line a verb words itself. */
int cli_fail(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same line for a note that is no failure (a recovery, a wait). */
void cli_note(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print "nerve VERB: message" and a pointer to --help; return CLI_USAGE. */
int cli_usage(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print the verb's --help text to stdout and return CLI_OK (CLI_USAGE if
 * VERB is not a built-in verb). */
int cli_print_help(const char *verb);
/* The command's usage and the list of built-in verbs (tools/cmd/help.c). */
void cli_usage_all(FILE *f);
/* The i-th external verb that nerve ships (help.c's table), or NULL past
 * the last; *how (if not NULL) says how to install it. */
const char *cli_external_known(size_t i, const char **how);

/* ---- options (cli_opt.c; sizes: cli_size.c) ----------------------------- */

/* Reset getopt_long() for a verb's own argv (errors reported by us). */
void cli_reset_getopt(void);
/* Usage error for an unknown option or a missing value (after getopt). */
int cli_bad_option(const char *verb, int argc, char **argv);
/* Parse the options of a verb that has none but --help. Returns -1 to go
 * on with the verb (operands from optind), or the exit code (help
 * printed, or a usage error). */
int cli_help_only(const char *verb, int argc, char **argv);
/* Check a channel name before using it in messages and paths; prints the
 * rule and returns CLI_USAGE if it is not valid, else 0. */
int cli_check_name(const char *verb, const char *name);
/* The directory of the channel files, from the library's path of them
 * (nerve_chan_path): "/dev/shm". 0, or -1 (and "") if it cannot say. */
int cli_shm_dir(char *out, size_t len);
/* "--timeout SEC" and the like: seconds to nanoseconds; 0 or CLI_USAGE. */
int cli_seconds_to_ns(const char *verb, const char *s, int64_t *ns);

/* Parse helpers; each returns 0 or -1 on a malformed value. */
int cli_parse_u64(const char *s, uint64_t *out);
/* A byte count in nerve's one size grammar (nerve_size_parse(),
 * include/nerve/size.h): digits, then an optional unit K, M, G or T (either
 * case, powers of 1024), an optional "i" after the unit and an optional
 * "B" ("4096", "64K", "8MiB", "1gb"). No blanks, sign or fraction;
 * overflow is refused. */
int cli_parse_size(const char *s, uint64_t *out);
/* The grammar in words, for a usage message after a bad size. */
#define CLI_SIZE_WORDS                                                         \
    "a number with an optional K, M, G or T suffix, powers of 1024 (KiB, MB "  \
    "read the same), e.g. 4096, 64K, 8M, 1G"
int cli_parse_mode(const char *s, uint32_t *out); /* octal, <= 07777 */
int cli_parse_seconds(const char *s, double *out);
/* A time for --at: CLOCK_MONOTONIC nanoseconds, or relative to now with a
 * sign and a unit ("-1.5s", "-200ms", "-30us", "-500ns"). */
int cli_parse_time(const char *s, int64_t now_ns, int64_t *out);

/* ---- human-readable numbers (cli_human.c) ---------------------------- */

void cli_human_bytes(char *out, size_t len, uint64_t v); /* "64K", "1.5G" */
void cli_mem_str(char *out, size_t len, uint64_t v);     /* "64 KiB" */
void cli_human_age(char *out, size_t len, int64_t ns);   /* "1.5s", "3m" */
/* Messages present in a channel (head - tail + 1, or 0). */
uint64_t cli_present(const struct nerve_stats *st);

/* ---- signals (cli_read.c) ---------------------------------------------- */

/* Catch SIGINT and SIGTERM: set the interrupted flag and cancel the wait
 * of handle c (may be NULL), which is async-signal-safe by contract
 * (nerve_chan_cancel). cli_release_signals() forgets the handle before it
 * is closed. */
void cli_catch_signals(nerve_chan *c);
void cli_release_signals(void);
int cli_interrupted(void);

/* ---- the reading run of get and cat (cli_read.c) ---------------------- */

enum cli_fmt { CLI_FMT_RAW, CLI_FMT_HEX, CLI_FMT_TEXT, CLI_FMT_JSON };

/* --format F: 0, or CLI_USAGE (after a usage message) (cli_opt.c). */
int cli_parse_format(const char *verb, const char *s, enum cli_fmt *f);

/* Where the handle's cursor starts, before the first get. */
enum cli_start {
    CLI_START_HERE,        /* where nerve_chan_open put it */
    CLI_START_OLDEST,      /* before the oldest message present */
    CLI_START_NEWEST,      /* before the newest message present */
    CLI_START_AFTER_NEWEST /* after the newest: only what comes next */
};

/* One run of gets: open NAME for reading, place the cursor, then do
 * `count` gets (0: until interrupted) with `flags` (NERVE_GET_* and
 * NERVE_F_WAIT), `arg` and `timeout`, each message printed in `fmt`. An
 * interrupt (SIGINT, SIGTERM) ends the run with CLI_OK if
 * `interrupt_ends`; any other failure goes to `explain` if it is set and
 * returns an exit code (>= 0), else to cli_err(). */
struct cli_read {
    const char *verb, *name;
    enum cli_start start;
    uint32_t flags;
    int64_t arg, timeout;
    uint64_t count;
    enum cli_fmt fmt;
    int interrupt_ends;
    int (*explain)(const struct cli_read *r, nerve_chan *ch, int rc);
};
int cli_read_run(const struct cli_read *r);

/* ---- external verbs (cli_exec.c) --------------------------------------- */

/* Directory of this executable (from /proc/self/exe), or "" if unknown. */
void cli_self_dir(char *out, size_t len);
/* A regular file this process may execute. */
int cli_is_exec(const char *path);
/* Find nerve-VERB: beside this executable, then on the PATH. 0 or -1. */
int cli_find_external(const char *verb, char *out, size_t len);
/* Run the external program nerve-TOOL (found as for external verbs) with
 * the arguments SUB argv[1..argc); returns only on failure (CLI_FAIL). */
int cli_exec_external(const char *tool, const char *sub, int argc, char **argv);

/* ---- processes holding a channel (tools/cli_holders.c) ----------------- */

/* One process (other than this one) that maps a channel. */
struct cli_holder {
    long pid;
    int writer;        /* maps it writable: a handle that may put */
    char command[120]; /* its command line, cut to fit */
};
/* The processes mapping channel NAME's current file, from /proc/PID/maps
 * (at most max). Returns 0, or -1 if the file or /proc cannot be read.
 * *uninspectable counts processes whose maps could not be read. */
int cli_holders(const char *name, struct cli_holder *out, size_t max, size_t *n,
                size_t *uninspectable);

/* ---- text for a human (cli_text.c) and JSON (cli_json.c) --------------- */

/* The one escaping of text for a human (a terminal, a log): every name,
 * type, encoding, command line or payload that a verb prints outside JSON
 * goes through it, so that no file or process name can write escape
 * sequences into the operator's terminal. Printable UTF-8 is written as it
 * is; backslash as \\; the control characters (C0, DEL and C1, U+0080 to
 * U+009F) as \n \r \t \b \f or \u00XX (as JSON and `nerve echo` write
 * them); each byte that is not part of valid UTF-8 as \xHH. With
 * CLI_TEXT_KEEP_LINES, newlines and tabs are kept (multi-line text such
 * as a schema or a text payload). The Python tools use
 * nerve_tools._text.escape(), which follows the same rules. */
#define CLI_TEXT_KEEP_LINES 1u
void cli_text(FILE *f, const void *s, size_t len, unsigned flags);
/* cli_text() of a NUL-terminated string (NULL: nothing). */
void cli_ctext(FILE *f, const char *s);
/* cli_text() of s into buf (cap bytes, always NUL-terminated; cut short
 * with "..." when it does not fit), for printf-style columns. Returns
 * buf. */
const char *cli_text_buf(char *buf, size_t cap, const char *s);

void json_cstr(FILE *f, const char *s);
/* "text" if buf is valid UTF-8, else "base64" as the key; writes
 * ,"KEY":"..." with the given key prefix (e.g. "text"/"base64"). */
void json_payload(FILE *f, const char *text_key, const char *b64_key,
                  const void *buf, size_t len);
int utf8_valid(const void *buf, size_t len);
void base64_write(FILE *f, const void *buf, size_t len);

/* Read all of a stream into a malloc'd buffer (cli_read.c). Returns 0 or
 * -1 (errno). */
int read_all(FILE *f, char **buf, size_t *len);

#endif
