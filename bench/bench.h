/* `nerve bench`: the latency and throughput benchmark, as a library that
 * the nerve command links. The procedure is the Ach paper's: create a
 * channel, fork receivers, fork senders; senders post timestamped
 * messages at a rate, receivers record the latency of every message and
 * count what they missed. The baselines (pipe, unix, mq, futex, spin,
 * condvar) do the same job with other mechanisms. */
#ifndef NERVE_BENCH_H
#define NERVE_BENCH_H

#define BENCH_HELP                                                             \
    "usage: nerve bench [options]\n"                                           \
    "Measure message latency (CLOCK_MONOTONIC, send to receive) between\n"     \
    "forked sender and receiver processes. Several transports in one run\n"    \
    "alternate in rounds, so they share the machine's conditions.\n"           \
    "  --transport LIST  comma-separated: nerve, pipe (a pipe per sender "     \
    "and\n"                                                                    \
    "                    receiver), unix (datagram socketpairs), mq (POSIX\n"  \
    "                    message queue per receiver), futex (bare wake-up "    \
    "of\n"                                                                     \
    "                    one shared word; no payload), spin (one shared "      \
    "cache\n"                                                                  \
    "                    line polled; no payload), condvar (Ach-style ring,\n" \
    "                    readers copy under a process-shared mutex and wait "  \
    "on\n"                                                                     \
    "                    a condition variable); default nerve\n"               \
    "  --senders LIST    sender processes; a list runs one measurement per\n"  \
    "                    count (default 1)\n"                                  \
    "  --receivers LIST  receiver processes; a list (1,2,4,8) runs one\n"      \
    "                    measurement per count (default 1)\n"                  \
    "  --rate HZ         messages per second per sender; 0 = back-to-back\n"   \
    "                    (default 1000)\n"                                     \
    "  --size LIST       message size, at least 24 (default 64; K, M "         \
    "suffix);\n"                                                               \
    "                    a list runs one measurement per size\n"               \
    "  --duration SEC    sending time per measurement (default 1)\n"           \
    "  --rounds N        split each measurement into N alternating rounds\n"   \
    "                    (default 5 with several transports, else 1)\n"        \
    "  --wait            receivers block until a message arrives (default)\n"  \
    "  --poll            receivers spin on non-blocking reads\n"               \
    "                    (futex always waits and spin always polls)\n"         \
    "  --zero-copy       nerve receivers read through a zero-copy view\n"      \
    "  --newest          nerve and condvar receivers take the newest "         \
    "message\n"                                                                \
    "                    (skipping older ones; counted as missed) instead\n"   \
    "                    of the next one\n"                                    \
    "  --fifo PRIO       SCHED_FIFO priority for senders and receivers, and\n" \
    "                    locked memory; reported when not permitted\n"         \
    "  --cpus LIST       pin receiver i to LIST[i mod n] and sender j to\n"    \
    "                    LIST[(receivers + j) mod n], e.g. 0,1 or 2-5\n"       \
    "  --workload W      ach: 1 kHz, 64 B, 1 sender with 1/2/4/8 receivers,\n" \
    "                    and 2 senders with 1 receiver; furom: 40 B at 2 "     \
    "kHz,\n"                                                                   \
    "                    8 KB at 100 Hz, 1 MB at 10 Hz (1 to 1); both over\n"  \
    "                    nerve, futex, condvar, pipe, unix and mq unless\n"    \
    "                    --transport is given; throughput: 64 B "              \
    "back-to-back\n"                                                           \
    "                    to one polling receiver from 1, 2 and 4 senders,\n"   \
    "                    over nerve and pipe unless --transport is given,\n"   \
    "                    then 1, 2 and 4 nerve senders with no receiver\n"     \
    "                    (the writers' own ceiling)\n"                         \
    "  --json FILE       write one JSON line per measurement ('-': stdout,\n"  \
    "                    then the table goes to stderr); fields in\n"          \
    "                    docs/cli.md\n"                                        \
    "  --histogram FILE  write each measurement's latency histogram (TSV)\n"   \
    "  --name PREFIX     prefix of the channel and queue names\n"              \
    "                    (default nerve-bench)\n"                              \
    "  --quiet           no table\n"                                           \
    "Ping-pong (--pingpong): two processes pinned to --cpus A,B send a\n"      \
    "message back and forth; the hop is total / (2 x round trips), the\n"      \
    "percentiles are of half round trips, and the floors run in the same\n"    \
    "rounds: spin (one shared cache line), futex (bare wake-up), memcpy\n"     \
    "(one warm copy, one CPU), memcpy-xfer (the copies of poll-copy through\n" \
    "a plain shared mapping between the two CPUs, with a one-line flag).\n"    \
    "  --pingpong        run the ping-pong plan instead; --size takes a "      \
    "list\n"                                                                   \
    "                    (default 64,4K,64K,1M, at least 8 bytes), "           \
    "--duration\n"                                                             \
    "                    is per row over all rounds (default 1), --rounds\n"   \
    "                    defaults to 3; --poll, --wait, --zero-copy narrow\n"  \
    "                    the rows\n"                                           \
    "  --rows LIST       spin, futex, memcpy, memcpy-xfer, poll-zc,\n"         \
    "                    poll-copy, wait-zc, wait-copy, floors, nerve\n"       \
    "                    (default all)\n"                                      \
    "  --lines LIST      add lines-K floors: K cache lines per hop (1-8)\n"    \
    "  --iterations N    exactly N timed round trips per row and round\n"      \
    "  --ring N          data ring of the nerve and memcpy-xfer rows: N x\n"   \
    "                    (size + 256) bytes, at least 1 MiB (2-1024,\n"        \
    "                    default 16)\n"                                        \
    "  --warmup N        untimed round trips first (default 1000 polling,\n"   \
    "                    100 blocking)\n"                                      \
    "Exit 0 when every measurement ran (a transport that cannot carry the\n"   \
    "size is reported as skipped), 1 when one failed, 2 on usage errors.\n"

/* Run `nerve bench`; argv[0] is "bench". Returns the exit code. */
int bench_main(int argc, char **argv);

#endif
