/* Crash points: named places in the write protocol where the test build
 * (NERVE_CRASHPOINTS, CMake target nerve_crash) can kill its own process
 * with SIGKILL, so tests/mp and tests/stress can prove that a writer dying
 * exactly there leaves a usable channel. Set NERVE_CRASHPOINT=<name> in the
 * environment to arm one; NERVE_CRASHPOINT_SKIP=N passes it N times first.
 * In normal builds the markers compile to nothing. */
#ifndef NERVE_CRASHPOINT_H
#define NERVE_CRASHPOINT_H

#ifdef NERVE_CRASHPOINTS
void nerve__crashpoint(const char *name);
/* Arm `name` (NULL disarms) in this process, overriding the environment;
 * for forked test children. Tests declare it themselves: it is internal. */
void nerve__crashpoint_arm(const char *name, long skip);
#define NERVE_CRASHPOINT(name) nerve__crashpoint(name)
#else
#define NERVE_CRASHPOINT(name) ((void)0)
/* Every NERVE_CRASHPOINT of a channel's growth (src/chan_open.c, GROWTH,
 * G2-G5): tests/mp/test_mp_grow.c kills a grower at each. */
#define NERVE_CRASHPOINT_GROW_NAMES                                            \
    "grow.locked", "grow.copied", "grow.renamed", "grow.marked"

#endif

/* Every NERVE_CRASHPOINT of src/chan.c, in the order a put passes them:
 * the initialiser of the list the crash tests (tests/mp/test_mp_crash.c,
 * tests/stress/torture.c) kill a writer at. A point added to chan.c goes
 * here too, or no test kills a writer there. */
#define NERVE_CRASHPOINT_NAMES                                                 \
    "put.locked", "put.after-tail", "put.mid-payload", "put.after-payload",    \
        "put.after-slot", "put.after-desc-clear", "put.after-desc-fields",     \
        "put.after-desc-seq", "put.after-wpos", "put.after-commit",            \
        "put.after-unlock", "put.after-wake", "reserve.locked",                \
        "commit.before-commit"

/* Every NERVE_CRASHPOINT of a writer open that takes a channel over from
 * another PID namespace (src/platform/linux/claim.c, WRITERS' NAMESPACE,
 * N3-N5): the torture's namespace episodes kill a writer at each. */
#define NERVE_CRASHPOINT_CLAIM_NAMES                                           \
    "claim.exclusive", "claim.after-reset", "claim.after-ns"

/* Every NERVE_CRASHPOINT of a channel's growth (src/chan_open.c, GROWTH,
 * G2-G5): tests/mp/test_mp_grow.c kills a grower at each. */
#define NERVE_CRASHPOINT_GROW_NAMES                                            \
    "grow.locked", "grow.copied", "grow.renamed", "grow.marked"

#endif
