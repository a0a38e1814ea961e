/* nerve bench: the latency and throughput benchmark. Its options and help
 * text live with the benchmark library (bench/bench.h, bench/bench.c),
 * which also builds without the command. */
#include "../cli.h"

#include "../../bench/bench.h"

static int run(int argc, char **argv)
{
    return bench_main(argc, argv);
}

const struct cli_verb cli_verb_bench = {
    "bench", "latency and throughput benchmark", BENCH_HELP, run};
