/* Shared pieces of the `nerve` command: verb table, error reporting, JSON
 * output and option parsing helpers. Everything here sits on the public
 * API (include/nerve/nerve.h) only. */
#ifndef NERVE_TOOLS_CLI_H
#define NERVE_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nerve/nerve.h>

/* Exit codes of every verb. */
#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

/* One verb: its name, a one-line summary, its --help text and its entry
 * point (argv[0] is the verb name). */
struct cli_verb {
    const char *name;
    const char *summary;
    const char *usage;
    int (*run)(int argc, char **argv);
};

extern const struct cli_verb cli_verbs[];
extern const size_t cli_nverbs;

/* Verb entry points (tools/chan_verbs.c, tools/bench_verb.c). */
int cli_create(int argc, char **argv);
int cli_rm(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_put(int argc, char **argv);
int cli_get(int argc, char **argv);
int cli_cat(int argc, char **argv);
int cli_chmod(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_help(int argc, char **argv);

/* Print "nerve VERB: what: NAME: message" for a nerve error code to stderr
 * and return CLI_FAIL. */
int cli_err(const char *verb, const char *what, int rc);
/* Print "nerve VERB: message" and a pointer to --help; return CLI_USAGE. */
int cli_usage(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print the verb's --help text to stdout and return CLI_OK. */
int cli_print_help(const char *verb);
/* Run the external program nerve-TOOL (found as for external verbs) with
 * the arguments SUB argv[1..argc); returns only on failure (CLI_FAIL). */
int cli_exec_external(const char *tool, const char *sub, int argc,
                      char **argv);

/* Parse helpers; each returns 0 or -1 on a malformed value. */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_size(const char *s, uint64_t *out); /* 64, 8K, 1M, 1G */
int cli_parse_mode(const char *s, uint32_t *out); /* octal, <= 07777 */
int cli_parse_seconds(const char *s, double *out);
/* A time for --at: CLOCK_MONOTONIC nanoseconds, or relative to now with a
 * sign and a unit ("-1.5s", "-200ms", "-30us", "-500ns"). */
int cli_parse_time(const char *s, int64_t now_ns, int64_t *out);

/* JSON output. */
void json_str(FILE *f, const char *s, size_t len);
void json_cstr(FILE *f, const char *s);
/* "text" if buf is valid UTF-8, else "base64" as the key; writes
 * ,"KEY":"..." with the given key prefix (e.g. "text"/"base64"). */
void json_payload(FILE *f, const char *text_key, const char *b64_key,
                  const void *buf, size_t len);
int utf8_valid(const void *buf, size_t len);
void base64_write(FILE *f, const void *buf, size_t len);
/* ISO 8601 UTC with nanoseconds, e.g. 2026-11-22T10:00:00.123456789Z. */
void iso8601(char *out, size_t len, int64_t realtime_ns);

/* Read all of a stream into a malloc'd buffer. Returns 0 or -1 (errno). */
int read_all(FILE *f, char **buf, size_t *len);

#endif
