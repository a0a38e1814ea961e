/* nerve-ros2-dds: the type catalog handed over by `nerve ros2`. ros2_dds.c
 * has the overview and ros2_dds.h the map of the files. */
#include "ros2_dds.h"

/* ---- the type catalog (from nerve ros2: rosbags' definitions) ---------- */

static struct type_ent *types;
static size_t ntypes;

/* Records "T <type> <hash or -> <schema length>\n<schema>\n", read once. */
int catalog_load(int fd)
{
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    if (buf == NULL) {
        return -1;
    }
    for (;;) {
        if (len == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (b == NULL) {
                free(buf);
                return -1;
            }
            buf = b;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    size_t tcap = 0;
    char *p = buf, *end = buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL || p[0] != 'T' || p[1] != ' ') {
            return -1;
        }
        *nl = '\0';
        char *type = p + 2, *hash = strchr(type, ' ');
        if (hash == NULL) {
            return -1;
        }
        *hash++ = '\0';
        char *lens = strchr(hash, ' ');
        if (lens == NULL) {
            return -1;
        }
        *lens++ = '\0';
        size_t slen = strtoull(lens, NULL, 10);
        char *schema = nl + 1;
        if (slen > (size_t)(end - schema) - 1 || schema[slen] != '\n') {
            return -1;
        }
        schema[slen] = '\0';
        if (ntypes == tcap) {
            tcap = tcap ? 2 * tcap : 256;
            struct type_ent *t = realloc(types, tcap * sizeof *t);
            if (t == NULL) {
                return -1;
            }
            types = t;
        }
        types[ntypes++] = (struct type_ent){
            type, strcmp(hash, "-") == 0 ? NULL : hash, schema, slen};
        p = schema + slen + 1;
    }
    return 0;
}

const struct type_ent *type_find(const char *type)
{
    for (size_t i = 0; i < ntypes; i++) {
        if (strcmp(types[i].type, type) == 0) {
            return &types[i];
        }
    }
    return NULL;
}

/* "pkg/msg/Name" -> "pkg::msg::dds_::Name_", and the same for an action's
 * messages ("pkg/action/Name_FeedbackMessage": an action's feedback topic
 * carries one); 0 or -1 when not a ROS 2 message type. */
int dds_type_of(const char *ros, char *out, size_t len)
{
    const char *a = strchr(ros, '/');
    size_t kl = a == NULL                        ? 0
                : strncmp(a, "/msg/", 5) == 0    ? 3
                : strncmp(a, "/action/", 8) == 0 ? 6
                                                 : 0;
    if (a == NULL || a == ros || kl == 0) {
        return -1;
    }
    const char *name = a + kl + 2;
    if (*name == '\0' || strchr(name, '/') != NULL) {
        return -1;
    }
    int n = snprintf(out, len, "%.*s::%.*s::dds_::%s_", (int)(a - ros), ros,
                     (int)kl, a + 1, name);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The reverse: "pkg::msg::dds_::Name_" -> "pkg/msg/Name" (and
 * "::action::dds_::"). */
int ros_type_of(const char *dds, char *out, size_t len)
{
    const char *a = strstr(dds, "::msg::dds_::");
    size_t kl = 3;
    if (a == NULL && (a = strstr(dds, "::action::dds_::")) != NULL) {
        kl = 6;
    }
    size_t n = strlen(dds);
    if (a == NULL || a == dds || n < 2 || dds[n - 1] != '_') {
        return -1;
    }
    const char *name = a + kl + 10;
    size_t nl = (size_t)(dds + n - 1 - name);
    if (nl == 0) {
        return -1;
    }
    int w = snprintf(out, len, "%.*s/%.*s/%.*s", (int)(a - dds), dds, (int)kl,
                     a + 2, (int)nl, name);
    return w > 0 && (size_t)w < len ? 0 : -1;
}
