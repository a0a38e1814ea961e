/* nerve library version (SemVer) and ABI version. CMake reads the
 * NERVE_VERSION_MAJOR/MINOR/PATCH and NERVE_ABI_VERSION lines; keep their
 * form. The shared-memory layout has its own version, NERVE_LAYOUT_VERSION
 * in chan.h, which changes only when the bytes in a channel file change.
 *
 * These macros say which headers a program was compiled against;
 * nerve_version() says which library it runs with. docs/abi.md gives the
 * rules that keep the two compatible. */
#ifndef NERVE_VERSION_H
#define NERVE_VERSION_H

#include "common.h"

#define NERVE_VERSION_MAJOR 0
#define NERVE_VERSION_MINOR 1
#define NERVE_VERSION_PATCH 0

/* The version as one number, major * 10000 + minor * 100 + patch. */
#define NERVE_VERSION_NUMBER                                                   \
    (NERVE_VERSION_MAJOR * 10000 + NERVE_VERSION_MINOR * 100 +                 \
     NERVE_VERSION_PATCH)

/* The version as text, "MAJOR.MINOR.PATCH". */
#define NERVE__STR2(x) #x
#define NERVE__STR(x) NERVE__STR2(x)
#define NERVE_VERSION_STRING                                                   \
    NERVE__STR(NERVE_VERSION_MAJOR)                                            \
    "." NERVE__STR(NERVE_VERSION_MINOR) "." NERVE__STR(NERVE_VERSION_PATCH)

/* The binary interface's version: the shared library's SONAME is
 * libnerve.so.NERVE_ABI_VERSION and its symbols carry the version node
 * NERVE_<NERVE_ABI_VERSION>.0. It changes only when a public struct changes
 * size or layout, or an exported function changes its signature or
 * meaning (tests/abi/abi_record.txt records each struct's size at each ABI
 * version). Adding functions, flags, error codes or fields carved out of
 * a reserved tail does not change it. */
#define NERVE_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library this program runs with, as
 * NERVE_VERSION_NUMBER packs it (it may differ from the headers' if the
 * shared library was replaced); stores its "MAJOR.MINOR.PATCH" text, a
 * static string, in *text when text is not NULL.
 * Thread: any.  Blocking: no.  RT: safe.  Signal: safe. */
NERVE_API int nerve_version(const char **text);

#ifdef __cplusplus
}
#endif

#endif
