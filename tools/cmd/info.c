/* nerve info: a channel's header, counters and metadata. */
#include "../cli.h"

#include <getopt.h>
#include <inttypes.h>

static const char help[] =
    "usage: nerve info NAME [--json]\n"
    "Show a channel's header: layout and creator version, geometry, counters,\n"
    "newest message, creation time, permissions and metadata.\n"
    "  --json           one JSON object (fields in docs/cli.md)\n";

static const struct option opts[] = {
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The facts both forms print. */
struct info {
    const char *name;
    struct nerve_stats st;
    struct nerve_meta meta;
    int64_t now;
    char created[64], newest[64]; /* ISO 8601; newest "" when none */
    unsigned cv;                  /* creator version, packed */
};

static void print_json(const struct info *in)
{
    const struct nerve_stats st = in->st;
    const struct nerve_meta meta = in->meta;
    const char *name = in->name, *created = in->created, *newest = in->newest;
    unsigned cv = in->cv;
    int64_t now = in->now;
    printf("{\"name\":");
    json_cstr(stdout, name);
    printf(",\"layout_version\":%u,\"creator_version\":\"%u.%u.%u\""
           ",\"file_size\":%" PRIu64 ",\"slots\":%" PRIu64
           ",\"data_size\":%" PRIu64 ",\"head_seq\":%" PRIu64
           ",\"tail_seq\":%" PRIu64 ",\"messages\":%" PRIu64
           ",\"bytes_total\":%" PRIu64 ",\"waiters\":%" PRIu64
           ",\"created\":\"%s\",\"created_ns\":%" PRId64,
           st.layout_version, cv / 10000, cv / 100 % 100, cv % 100,
           st.file_size, st.slots, st.data_size, st.head_seq, st.tail_seq,
           cli_present(&st), st.bytes_total, st.waiters, created,
           st.created_ns);
    if (st.head_seq > 0) {
        printf(",\"newest_time\":\"%s\",\"newest_time_ns\":%" PRId64
               ",\"newest_age_ns\":%" PRId64,
               newest, st.newest_time_ns, now - st.newest_time_ns);
    } else {
        fputs(",\"newest_time\":null,\"newest_time_ns\":null"
              ",\"newest_age_ns\":null",
              stdout);
    }
    printf(",\"remove_unused\":%s",
           (st.create_flags & NERVE_C_REMOVE_UNUSED) ? "true" : "false");
    printf(",\"mode\":\"%04o\",\"uid\":%u,\"gid\":%u,\"type\":", st.mode,
           st.uid, st.gid);
    json_cstr(stdout, meta.type);
    fputs(",\"encoding\":", stdout);
    json_cstr(stdout, meta.encoding);
    printf(",\"schema_len\":%" PRIu64, meta.schema_len);
    json_payload(stdout, "schema", "schema_base64", meta.schema,
                 meta.schema_len);
    fputs("}\n", stdout);
}

static void print_text(const struct info *in)
{
    const struct nerve_stats st = in->st;
    const struct nerve_meta meta = in->meta;
    const char *name = in->name, *created = in->created, *newest = in->newest;
    unsigned cv = in->cv;
    int64_t now = in->now;
    printf("name:            %s\n", name);
    printf("layout version:  %u (creator nerve %u.%u.%u)\n", st.layout_version,
           cv / 10000, cv / 100 % 100, cv % 100);
    printf("file size:       %" PRIu64 " bytes\n", st.file_size);
    printf("slots:           %" PRIu64 "\n", st.slots);
    printf("data size:       %" PRIu64 " bytes\n", st.data_size);
    printf("sequence:        head %" PRIu64 ", tail %" PRIu64 " (%" PRIu64
           " messages present)\n",
           st.head_seq, st.tail_seq, cli_present(&st));
    printf("bytes published: %" PRIu64 "\n", st.bytes_total);
    if (st.head_seq > 0) {
        char age[32];
        cli_human_age(age, sizeof age, now - st.newest_time_ns);
        printf("newest:          %s (%s ago)\n", newest, age);
    } else {
        printf("newest:          -\n");
    }
    printf("waiting readers: %" PRIu64 "\n", st.waiters);
    printf("created:         %s\n", created);
    printf("mode:            %04o (uid %u, gid %u)\n", st.mode, st.uid, st.gid);
    printf("lifetime:        %s\n",
           (st.create_flags & NERVE_C_REMOVE_UNUSED)
               ? "removed when unused (made by rmw_nerve)"
               : "until removed");
    fputs("type:            ", stdout);
    cli_ctext(stdout, meta.type[0] ? meta.type : "-");
    fputs("\nencoding:        ", stdout);
    cli_ctext(stdout, meta.encoding[0] ? meta.encoding : "-");
    fputc('\n', stdout);
    if (meta.schema_len == 0) {
        printf("schema:          -\n");
    } else if (utf8_valid(meta.schema, meta.schema_len)) {
        printf("schema:          %" PRIu64 " bytes\n", meta.schema_len);
        cli_text(stdout, meta.schema, meta.schema_len, CLI_TEXT_KEEP_LINES);
        if (meta.schema[meta.schema_len - 1] != '\n') {
            fputc('\n', stdout);
        }
    } else {
        printf("schema:          %" PRIu64 " bytes (binary)\n",
               meta.schema_len);
    }
}

/* Parse argv: *json set, *name the operand. Returns -1 to go on, or the
 * exit code. */
static int parse_args(int argc, char **argv, int *json, const char **name)
{
    int c;
    cli_reset_getopt();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': *json = 1; break;
        case 'h': return cli_print_help("info");
        default: return cli_bad_option("info", argc, argv);
        }
    }
    if (optind != argc - 1) {
        return cli_usage("info", optind >= argc ? "missing NAME"
                                                : "too many arguments");
    }
    *name = argv[optind];
    return cli_check_name("info", *name) != 0 ? CLI_USAGE : -1;
}

static int run(int argc, char **argv)
{
    struct info in = {0};
    int json = 0;
    int status = parse_args(argc, argv, &json, &in.name);
    if (status >= 0) {
        return status;
    }
    nerve_chan *ch;
    int rc = nerve_chan_open(in.name, NERVE_O_READ, &ch);
    if (rc != 0) {
        return cli_err("info", in.name, rc);
    }
    rc = nerve_chan_stat(ch, &in.st);
    if (rc == 0) {
        rc = nerve_chan_meta(ch, &in.meta);
    }
    if (rc != 0) {
        nerve_chan_close(ch);
        return cli_err("info", in.name, rc);
    }
    in.now = nerve_clock_now_ns();
    in.cv = in.st.creator_version;
    iso8601(in.created, sizeof in.created, in.st.created_ns);
    if (in.st.head_seq > 0) {
        iso8601(in.newest, sizeof in.newest,
                nerve_clock_to_realtime_ns(in.st.newest_time_ns));
    }
    if (json) {
        print_json(&in);
    } else {
        print_text(&in);
    }
    nerve_chan_close(ch);
    return CLI_OK;
}

const struct cli_verb cli_verb_info = {
    "info", "show a channel's header, counters and metadata", help, run};
