/* The C half of python/bench/bench_python.py: the same put + get loop of
 * small messages that the Python benchmark times, so the two can be
 * compared side by side in one run. Batches of BATCH calls are timed with
 * CLOCK_MONOTONIC and each batch's mean per call is one sample; the samples
 * are printed as one JSON object for the Python script to summarise.
 *
 * usage: put_get_loop NAME SIZE ROUNDS BATCH   (the channel must exist) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nerve/chan.h>
#include <nerve/errors.h>

static void print_samples(const char *key, const double *v, long n, int last)
{
    printf("\"%s\":[", key);
    for (long i = 0; i < n; i++) {
        printf(i ? ",%.2f" : "%.2f", v[i]);
    }
    printf("]%s", last ? "" : ",");
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: put_get_loop NAME SIZE ROUNDS BATCH\n");
        return 2;
    }
    const char *name = argv[1];
    size_t size = strtoul(argv[2], NULL, 10);
    long rounds = strtol(argv[3], NULL, 10);
    long batch = strtol(argv[4], NULL, 10);
    nerve_chan *w, *r;
    int rc = nerve_chan_open(name, NERVE_O_WRITE, &w);
    if (rc == 0) {
        rc = nerve_chan_open(name, NERVE_O_READ, &r);
    }
    if (rc != 0) {
        fprintf(stderr, "put_get_loop: %s: %s\n", name, nerve_strerror(rc));
        return 1;
    }
    char *msg = calloc(1, size), *buf = malloc(size + 64);
    double *put_ns = malloc(sizeof(double) * (size_t)rounds);
    double *get_ns = malloc(sizeof(double) * (size_t)rounds);
    if (!msg || !buf || !put_ns || !get_ns) {
        return 1;
    }
    struct nerve_get_info info;
    nerve_chan_seek(r, 0);
    for (long k = 0; k < rounds; k++) {
        int64_t t0 = nerve_clock_now_ns();
        for (long i = 0; i < batch; i++) {
            memcpy(msg, &i, sizeof i);
            if (nerve_chan_put(w, msg, size, NERVE_FOREVER, NULL, 0) != 0) {
                return 1;
            }
        }
        int64_t t1 = nerve_clock_now_ns();
        for (long i = 0; i < batch; i++) {
            rc = nerve_chan_get(r, buf, size + 64, 0, 0, &info, NERVE_GET_NEXT);
            if (rc != 0 || info.len != size) {
                fprintf(stderr, "put_get_loop: get: %s\n", nerve_strerror(rc));
                return 1;
            }
        }
        int64_t t2 = nerve_clock_now_ns();
        put_ns[k] = (double)(t1 - t0) / (double)batch;
        get_ns[k] = (double)(t2 - t1) / (double)batch;
    }
    printf("{");
    print_samples("put_ns", put_ns, rounds, 0);
    print_samples("get_ns", get_ns, rounds, 1);
    printf("}\n");
    nerve_chan_close(r);
    nerve_chan_close(w);
    free(msg);
    free(buf);
    free(put_ns);
    free(get_ns);
    return 0;
}
