/* nerve-ros2-dds: the command line. ros2_dds.c has the overview and
 * ros2_dds.h the map of the files. */
#include "ros2_dds.h"

/* ---- options ----------------------------------------------------------- */

struct ros2_opt opt = {.node = "nerve_ros2",
                       .ns = "/",
                       .max_chan = 64u << 20,
                       .max_total = 512u << 20,
                       .catalog_fd = -1};

/* A size in the nerve command's one grammar (tools/cli_size.c); a bad one
 * ends the program with a usage error. */
static uint64_t parse_size(const char *s)
{
    uint64_t v;
    if (cli_parse_size(s, &v) != 0) {
        fprintf(stderr, "%s: bad size '%s' (" CLI_SIZE_WORDS ")\n", PROG, s);
        exit(2);
    }
    return v;
}

/* --services only where it is built (a test looks for it here). */
#ifdef NERVE_ROS2_SERVICES
#define SERVICES_USAGE " [--services GLOB]... [--services-from-ros GLOB]..."
#else
#define SERVICES_USAGE ""
#endif

static void usage_to(FILE *f)
{
    fprintf(f,
            "usage: nerve-ros2-dds [--domain N] [--node NAME] [--namespace NS]"
            " [--qos default|sensor_data] [--latch] [--to GLOB=TOPIC]..."
            " [--from TOPIC=CHANNEL]..." SERVICES_USAGE " [--catalog-fd FD]"
            " [--max-channel-size N] [--max-import-total N] [--slots N]"
            " [--size N]\n"
            "(the data path of `nerve ros2`; run that instead)\n");
}

static void usage(void)
{
    usage_to(stderr);
    exit(2);
}

void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage_to(stdout);
            exit(0);
        }
        if (strcmp(a, "--latch") == 0) {
            opt.latch = 1;
            continue;
        }
        if (i + 1 >= argc) {
            usage();
        }
        char *v = argv[++i];
        if (strcmp(a, "--domain") == 0) {
            opt.domain = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(a, "--node") == 0) {
            opt.node = v;
        } else if (strcmp(a, "--namespace") == 0) {
            opt.ns = v;
        } else if (strcmp(a, "--qos") == 0) {
            if (strcmp(v, "sensor_data") == 0) {
                opt.sensor_data = 1;
            } else if (strcmp(v, "default") != 0) {
                usage();
            }
        } else if (strcmp(a, "--to") == 0 || strcmp(a, "--from") == 0) {
            char *eq = strchr(v, '=');
            if (eq == NULL) {
                usage();
            }
            *eq = '\0';
            if (a[2] == 't') {
                if (opt.nto == 64) {
                    usage();
                }
                int rc = nerve_glob_check(v); /* one that never matches */
                if (rc != 0) {
                    fprintf(stderr, "%s: --to %s: %s\n", PROG, v,
                            nerve_err_detail(rc));
                    exit(2);
                }
                opt.to[opt.nto++] = (struct to_spec){v, eq + 1};
            } else {
                if (opt.nfrom == 64 || strlen(v) >= TOPIC_MAX ||
                    strlen(eq + 1) > NERVE_NAME_MAX) {
                    usage();
                }
                opt.from[opt.nfrom++] = (struct from_spec){v, eq + 1};
            }
        } else if (strcmp(a, "--services") == 0) {
            if (opt.nservices == 64) {
                usage();
            }
            opt.services[opt.nservices++] = v;
        } else if (strcmp(a, "--services-from-ros") == 0) {
            if (opt.nservices_from == 64) {
                usage();
            }
            opt.services_from[opt.nservices_from++] = v;
        } else if (strcmp(a, "--catalog-fd") == 0) {
            opt.catalog_fd = atoi(v);
        } else if (strcmp(a, "--max-channel-size") == 0) {
            opt.max_chan = parse_size(v);
        } else if (strcmp(a, "--max-import-total") == 0) {
            opt.max_total = parse_size(v);
        } else if (strcmp(a, "--slots") == 0) {
            opt.slots = parse_size(v);
        } else if (strcmp(a, "--size") == 0) {
            opt.size = parse_size(v);
        } else {
            usage();
        }
    }
}
