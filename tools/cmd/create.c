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
    "                   K, M, G (default 1M). The channel is a file in\n"
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

static int run(int argc, char **argv)
{
    struct nerve_chan_opts o = NERVE_CHAN_OPTS_INIT;
    const char *schema_file = NULL;
    int c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (cli_parse_u64(optarg, &o.slots) != 0 || o.slots == 0) {
                return cli_usage("create",
                                 "bad --slots '%s' (a whole number of "
                                 "messages kept, at least 1, e.g. 1024)",
                                 optarg);
            }
            break;
        case 's':
            if (cli_parse_size(optarg, &o.data_size) != 0 || o.data_size == 0) {
                return cli_usage("create",
                                 "bad --size '%s' (bytes of the data ring, "
                                 "the largest message: a number with an "
                                 "optional K, M or G suffix, powers of "
                                 "1024, e.g. 4096, 64K, 8M, 1G; at least 1)",
                                 optarg);
            }
            break;
        case 'm':
            if (cli_parse_mode(optarg, &o.mode) != 0) {
                return cli_usage("create", "bad --mode '%s' (octal, e.g. 0640)",
                                 optarg);
            }
            break;
        case 't': o.type = optarg; break;
        case 'e': o.encoding = optarg; break;
        case 'S': schema_file = optarg; break;
        case 'x': o.flags |= NERVE_C_EXIST_OK; break;
        case 'h': return cli_print_help("create");
        default: return cli_bad_option("create", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("create", optind >= argc ? "missing NAME"
                                                  : "too many arguments");
    }
    const char *name = argv[optind];
    if (cli_check_name("create", name) != 0) {
        return CLI_USAGE;
    }
    char *schema = NULL;
    if (schema_file != NULL) {
        FILE *f =
            strcmp(schema_file, "-") == 0 ? stdin : fopen(schema_file, "rb");
        size_t len = 0;
        if (f == NULL || read_all(f, &schema, &len) != 0) {
            fprintf(stderr, "nerve create: --schema %s: %s\n", schema_file,
                    strerror(errno));
            if (f != NULL && f != stdin) {
                fclose(f);
            }
            return CLI_FAIL;
        }
        if (f != stdin) {
            fclose(f);
        }
        o.schema = schema;
        o.schema_len = len;
    }
    /* The file is memory, committed at creation: refuse what /dev/shm
     * cannot hold (header and metadata pages + 32-byte index entries +
     * the data ring, as docs/design/0001-shm-layout.md lays them out). */
    uint64_t need = o.data_size + o.slots * 32 + 64 * 1024;
    struct statvfs vfs;
    if (statvfs("/dev/shm", &vfs) == 0) {
        uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        if (need > avail) {
            char n[40], a[40];
            cli_mem_str(n, sizeof n, need);
            cli_mem_str(a, sizeof a, avail);
            fprintf(stderr,
                    "nerve create: %s: ENOSPC: this channel needs "
                    "about %s of memory and /dev/shm has %s free "
                    "(a channel's memory is committed when it is "
                    "created)\n",
                    name, n, a);
            free(schema);
            return CLI_FAIL;
        }
    }
    int rc = nerve_chan_create(name, &o);
    free(schema);
    if (rc == NERVE_EINVAL) {
        /* Say which field and which rule: type and encoding must be
         * printable UTF-8 text (the library's rule, chan_open.c). */
        const char *field[2] = {"--type", "--encoding"};
        const char *val[2] = {o.type, o.encoding};
        for (int k = 0; k < 2; k++) {
            if (val[k] == NULL) {
                continue;
            }
            size_t n = strlen(val[k]);
            if (!utf8_valid(val[k], n)) {
                fprintf(stderr,
                        "nerve create: %s: EINVAL: %s is not valid "
                        "UTF-8\n",
                        name, field[k]);
                return CLI_FAIL;
            }
            const unsigned char *u = (const unsigned char *)val[k];
            int ctl = 0;
            for (size_t i = 0; i < n && !ctl; i++) {
                ctl = u[i] < 0x20 || u[i] == 0x7f ||
                      (u[i] == 0xc2 && u[i + 1] <= 0x9f);
            }
            if (ctl) {
                char esc[4 * NERVE_TYPE_MAX + 8];
                fprintf(stderr,
                        "nerve create: %s: EINVAL: %s '%s' holds a control "
                        "character (types and encodings are printable "
                        "UTF-8: no C0, DEL or C1 control characters)\n",
                        name, field[k], cli_text_buf(esc, sizeof esc, val[k]));
                return CLI_FAIL;
            }
        }
    }
    if (rc != 0) {
        return cli_err("create", name, rc);
    }
    struct nerve_stats st;
    if (nerve_chan_stat_name(name, &st) == 0) {
        char fs[40], ds[40];
        cli_mem_str(fs, sizeof fs, st.file_size);
        cli_mem_str(ds, sizeof ds, st.data_size);
        printf("%s: %" PRIu64 " slot%s, %s data ring: %s of memory "
               "committed (/dev/shm/nerve.%s)\n",
               name, st.slots, st.slots == 1 ? "" : "s", ds, fs, name);
    }
    return CLI_OK;
}

const struct cli_verb cli_verb_create = {"create", "create a channel", help,
                                         run};
