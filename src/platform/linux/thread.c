/* Thread identity: the calling thread's TID, which the writer lock's word
 * holds (mutex.c, THE WORD), and the PID namespace those TIDs belong to
 * (claim.c, WRITERS' NAMESPACE). No shared state. */
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../platform.h"

/* The TID cache of nerve__tid() (platform.h). A fork child's only thread
 * inherits the forking thread's cache: the atfork handler clears it. */
NERVE__TLS uint32_t nerve__tid_cache;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

static void tid_forked(void)
{
    nerve__tid_cache = 0;
}

static void tid_init(void)
{
    (void)pthread_atfork(NULL, NULL, tid_forked);
}

uint32_t nerve__tid_lookup(void)
{
    pthread_once(&tid_once, tid_init);
    nerve__tid_cache = (uint32_t)syscall(SYS_gettid);
    return nerve__tid_cache;
}

uint64_t nerve__pidns_id(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}
