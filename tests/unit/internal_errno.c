/* The one errno-to-code mapping (nerve__err_from_errno, used by every file
 * operation): errnos nerve gives a meaning of its own map to that code,
 * and any other errno comes back as -errno, never folded into
 * NERVE_EINVAL, with its C library name and text (errors.h). */
#include "nerve_test.h"

#include <errno.h>

#include "platform.h"

int main(void)
{
    /* Folded on purpose: the same meaning for a channel. */
    NT_EQ(nerve__err_from_errno(EACCES), NERVE_EACCES);
    NT_EQ(nerve__err_from_errno(EPERM), NERVE_EACCES);
    NT_EQ(nerve__err_from_errno(EDQUOT), NERVE_ENOSPC);
    NT_EQ(nerve__err_from_errno(ELOOP), NERVE_ENOTCHAN);
    NT_EQ(nerve__err_from_errno(ENOENT), NERVE_ENOENT);
    NT_EQ(nerve__err_from_errno(EMFILE), NERVE_EMFILE);
    /* Unknown to nerve: passed through. */
    const int others[] = {EIO,       EOVERFLOW, ENOLCK,  EUCLEAN,
                          EREMOTEIO, ENOTDIR,   ETXTBSY, EMLINK};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        int e = others[i];
        NT_EQ(nerve__err_from_errno(e), -e);
        NT_ASSERT(nerve__err_from_errno(e) != NERVE_EINVAL);
        NT_ASSERT(strcmp(nerve_err_name(-e), "UNKNOWN") != 0);
        NT_ASSERT(strcmp(nerve_strerror(-e), "unknown error") != 0);
    }
    printf("ok\n");
    return 0;
}
