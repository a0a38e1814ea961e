/* The C writer and reader of the mixed C / C++ multi-process test. */
#include "mp_peer.h"

#include <stdio.h>
#include <string.h>

#include <nerve/nerve.h>

#include "nerve_test.h"

int mp_c_writer(const char *name, uint32_t id, uint64_t count)
{
    nerve_chan *c = NULL;
    int rc = nerve_chan_open(name, NERVE_O_WRITE, &c);
    if (rc != 0) {
        fprintf(stderr, "c writer: open %s: %s\n", name, nerve_strerror(rc));
        return 1;
    }
    struct nerve_meta m;
    if (nerve_chan_meta(c, &m) != 0 || strcmp(m.type, MP_SAMPLE_TYPE) != 0) {
        fprintf(stderr, "c writer: channel type is not %s\n", MP_SAMPLE_TYPE);
        nerve_chan_close(c);
        return 1;
    }
    unsigned char buf[MP_SAMPLE_LEN];
    for (uint64_t i = 0; i < count; i++) {
        nt_payload_fill(buf, sizeof buf, id, i);
        rc = nerve_chan_put(c, buf, sizeof buf, NERVE_FOREVER, NULL, 0);
        if (rc != 0) {
            fprintf(stderr, "c writer: put: %s\n", nerve_strerror(rc));
            nerve_chan_close(c);
            return 1;
        }
    }
    nerve_chan_close(c);
    return 0;
}

int mp_c_reader(const char *name, uint32_t nwriters, uint64_t count)
{
    nerve_chan *c = NULL;
    int rc = nerve_chan_open(name, NERVE_O_READ, &c);
    if (rc != 0) {
        fprintf(stderr, "c reader: open %s: %s\n", name, nerve_strerror(rc));
        return 1;
    }
    uint64_t next[8] = {0};
    uint64_t total = 0;
    int bad = 0;
    if (nwriters == 0 || nwriters > 7) {
        nerve_chan_close(c);
        return 1;
    }
    while (!bad && total < (uint64_t)nwriters * count) {
        unsigned char buf[MP_SAMPLE_LEN];
        struct nerve_get_info gi;
        /* 60 s: a writer may be descheduled for seconds on a loaded host
         * (or under TSan); a reader that hears nothing that long fails. */
        rc = nerve_chan_get(c, buf, sizeof buf, 0, 60ll * 1000000000ll, &gi,
                            NERVE_GET_NEXT | NERVE_F_WAIT);
        if (rc != 0) {
            fprintf(stderr, "c reader: get: %s after %llu\n",
                    nerve_strerror(rc), (unsigned long long)total);
            bad = 1;
            break;
        }
        uint32_t id;
        uint64_t counter;
        if (gi.len != MP_SAMPLE_LEN || gi.missed != 0 ||
            !nt_payload_check(buf, sizeof buf, &id, &counter) || id < 1 ||
            id > nwriters || counter != next[id]) {
            fprintf(stderr,
                    "c reader: bad sample seq %llu (len %llu, "
                    "missed %llu)\n",
                    (unsigned long long)gi.seq, (unsigned long long)gi.len,
                    (unsigned long long)gi.missed);
            bad = 1;
            break;
        }
        next[id]++;
        total++;
    }
    nerve_chan_close(c);
    return bad;
}
