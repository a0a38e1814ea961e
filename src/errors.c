/* Names and messages of error codes, generated from NERVE_ERRNO_MAP. */
#include "nerve/errors.h"

#include <stddef.h>

struct err_entry {
    int code;
    const char *name;
    const char *msg;
};

static const struct err_entry table[] = {
#define NERVE__ERR_ROW(name, value, msg) {(value), #name, (msg)},
    NERVE_ERRNO_MAP(NERVE__ERR_ROW)
#undef NERVE__ERR_ROW
};

static const struct err_entry *find(int err)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].code == err)
            return &table[i];
    }
    return NULL;
}

const char *nerve_strerror(int err)
{
    if (err == 0)
        return "success";
    const struct err_entry *e = find(err);
    return e ? e->msg : "unknown error";
}

const char *nerve_err_name(int err)
{
    if (err == 0)
        return "OK";
    const struct err_entry *e = find(err);
    return e ? e->name : "UNKNOWN";
}
