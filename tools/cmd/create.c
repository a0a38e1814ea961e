/* nerve create: create a channel and say how much memory it committed. */
#include "../cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

static const char help[] =
    "usage: nerve create NAME [--slots N] [--size BYTES] [--mode OCTAL]\n"
    "                         [--type T] [--encoding E] [--schema FILE]\n"
    "                         [--exist-ok]\n"
    "Create channel NAME (/dev/shm/nerve.NAME) and print the memory it\n"
    "committed.\n"
    "  --slots N        index ring entries (default 1024)\n"
    "  --size BYTES     data ring bytes, also the largest message; suffixes\n"
    "                   K, M, G, T (powers of 1024; KiB and MB read the\n"
    "                   same; default 1M). The channel is a file in\n"
    "                   /dev/shm, i.e. memory, committed when it is created:\n"
    "                   --size 8G takes 8 GB of RAM at once. Sizes larger\n"
    "                   than the free space of /dev/shm are refused.\n"
    "  --mode OCTAL     permission bits (default 0644)\n"
    "  --type T         type name recorded in the metadata\n"
    "  --encoding E     encoding (raw, cdr, ros1msg, protobuf, json, ...)\n"
    "  --schema FILE    schema text read from FILE ('-': standard input)\n"
    "  --exist-ok       succeed if an equal channel exists already\n";

static const struct option opts[] = {
    {"slots", required_argument, NULL, 'n'},
    {"size", required_argument, NULL, 's'},
    {"mode", required_argument, NULL, 'm'},
    {"type", required_argument, NULL, 't'},
    {"encoding", required_argument, NULL, 'e'},
    {"schema", required_argument, NULL, 'S'},
    {"exist-ok", no_argument, NULL, 'x'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct create_args {
    struct nerve_chan_opts o;
    const char *name, *schema_file;
};

/* Parse argv into *a. Returns -1 to go on, or the exit code. */
static int parse_args(int argc, char **argv, struct create_args *a)
{
    int c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (cli_parse_u64(optarg, &a->o.slots) != 0 || a->o.slots == 0) {
                return cli_usage("create",
                                 "bad --slots '%s' (a whole number of "
                                 "messages kept, at least 1, e.g. 1024)",
                                 optarg);
            }
            break;
        case 's':
            if (cli_parse_size(optarg, &a->o.data_size) != 0 ||
                a->o.data_size == 0) {
                return cli_usage("create",
                                 "bad --size '%s' (bytes of the data ring, "
                                 "the largest message: " CLI_SIZE_WORDS
                                 "; at least 1)",
                                 optarg);
            }
            /* "--size 8" meant as 8 MB makes a one-page ring: a plain
             * number is bytes, so say so where it is smaller than a page. */
            if (a->o.data_size < 4096 &&
                optarg[strspn(optarg, "0123456789")] == 0) {
                cli_note("create",
                         "warning: --size %s has no unit, so it is %s bytes "
                         "(the data ring is one page, 4096 bytes); write "
                         "%sM for MiB or %sK for KiB",
                         optarg, optarg, optarg, optarg);
            }
            break;
        case 'm':
            if (cli_parse_mode(optarg, &a->o.mode) != 0) {
                return cli_usage("create", "bad --mode '%s' (octal, e.g. 0640)",
                                 optarg);
            }
            break;
        case 't': a->o.type = optarg; break;
        case 'e': a->o.encoding = optarg; break;
        case 'S': a->schema_file = optarg; break;
        case 'x': a->o.flags |= NERVE_C_EXIST_OK; break;
        case 'h': return cli_print_help("create");
        default: return cli_bad_option("create", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("create", optind >= argc ? "missing NAME"
                                                  : "too many arguments");
    }
    a->name = argv[optind];
    return cli_check_name("create", a->name) != 0 ? CLI_USAGE : -1;
}

/* Read --schema FILE ('-': standard input) into a->o. Returns 0, or
 * CLI_FAIL (reported). */
static int read_schema(struct create_args *a, char **schema)
{
    const char *file = a->schema_file;
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    size_t len = 0;
    if (f == NULL || read_all(f, schema, &len) != 0) {
        int err = errno;
        if (f != NULL && f != stdin) {
            fclose(f);
        }
        return cli_fail("create", "--schema %s: %s", file, strerror(err));
    }
    if (f != stdin) {
        fclose(f);
    }
    a->o.schema = *schema;
    a->o.schema_len = len;
    return 0;
}

/* The file is memory, committed at creation: refuse what the shared
 * memory file system cannot hold (the library says what the file will
 * take). Returns 0, or CLI_FAIL (reported). */
static int check_room(const struct create_args *a)
{
    uint64_t need;
    char dir[256];
    struct statvfs vfs;
    int rc = nerve_chan_file_size(&a->o, &need);
    if (rc != 0) {
        return rc == NERVE_EINVAL ? 0 : cli_err("create", a->name, rc);
    }
    if (cli_shm_dir(dir, sizeof dir) != 0 || statvfs(dir, &vfs) != 0) {
        return 0;
    }
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (need <= avail) {
        return 0;
    }
    char n[40], f[40];
    cli_mem_str(n, sizeof n, need);
    cli_mem_str(f, sizeof f, avail);
    return cli_fail("create",
                    "%s: ENOSPC: this channel needs %s of memory and %s has "
                    "%s free (a channel's memory is committed when it is "
                    "created)",
                    a->name, n, dir, f);
}

/* After NERVE_EINVAL: say which of --type and --encoding breaks which
 * rule (printable UTF-8 text, the library's rule in chan_open.c).
 * Returns CLI_FAIL if it found one (reported), else 0. */
static int explain_einval(const struct create_args *a)
{
    const char *field[2] = {"--type", "--encoding"};
    const char *val[2] = {a->o.type, a->o.encoding};
    for (int k = 0; k < 2; k++) {
        if (val[k] == NULL) {
            continue;
        }
        size_t n = strlen(val[k]);
        if (!utf8_valid(val[k], n)) {
            return cli_fail("create", "%s: EINVAL: %s is not valid UTF-8",
                            a->name, field[k]);
        }
        const unsigned char *u = (const unsigned char *)val[k];
        int ctl = 0;
        for (size_t i = 0; i < n && !ctl; i++) {
            ctl = u[i] < 0x20 || u[i] == 0x7f ||
                  (u[i] == 0xc2 && u[i + 1] <= 0x9f);
        }
        if (ctl) {
            char esc[4 * NERVE_TYPE_MAX + 8];
            return cli_fail("create",
                            "%s: EINVAL: %s '%s' holds a control character "
                            "(types and encodings are printable UTF-8: no "
                            "C0, DEL or C1 control characters)",
                            a->name, field[k],
                            cli_text_buf(esc, sizeof esc, val[k]));
        }
    }
    return 0;
}

/* "NAME: N slots, S data ring: F of memory committed (PATH)". */
static void report(const char *name)
{
    struct nerve_stats st;
    char path[NERVE_PATH_MAX];
    if (nerve_chan_stat_name(name, &st) != 0 ||
        nerve_chan_path(name, 0, path, sizeof path) != 0) {
        return;
    }
    char fs[40], ds[40];
    cli_mem_str(fs, sizeof fs, st.file_size);
    cli_mem_str(ds, sizeof ds, st.data_size);
    printf("%s: %" PRIu64 " slot%s, %s data ring: %s of memory committed "
           "(%s)\n",
           name, st.slots, st.slots == 1 ? "" : "s", ds, fs, path);
}

static int run(int argc, char **argv)
{
    struct create_args a = {NERVE_CHAN_OPTS_INIT, NULL, NULL};
    int status = parse_args(argc, argv, &a);
    if (status >= 0) {
        return status;
    }
    char *schema = NULL;
    if (a.schema_file != NULL && (status = read_schema(&a, &schema)) != 0) {
        return status;
    }
    if ((status = check_room(&a)) != 0) {
        free(schema);
        return status;
    }
    int rc = nerve_chan_create(a.name, &a.o);
    free(schema);
    if (rc == NERVE_EINVAL && (status = explain_einval(&a)) != 0) {
        return status;
    }
    if (rc != 0) {
        return cli_err("create", a.name, rc);
    }
    report(a.name);
    return CLI_OK;
}

const struct cli_verb cli_verb_create = {"create", "create a channel", help,
                                         run};
