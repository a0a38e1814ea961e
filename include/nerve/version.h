/* nerve library version (SemVer). CMake reads these three lines; keep their
 * form. The shared-memory layout has its own version, NERVE_LAYOUT_VERSION in
 * chan.h, which changes only when the bytes in a channel file change. */
#ifndef NERVE_VERSION_H
#define NERVE_VERSION_H

#define NERVE_VERSION_MAJOR 0
#define NERVE_VERSION_MINOR 1
#define NERVE_VERSION_PATCH 0

/* The version as one number, major * 10000 + minor * 100 + patch. */
#define NERVE_VERSION_NUMBER                                                    \
    (NERVE_VERSION_MAJOR * 10000 + NERVE_VERSION_MINOR * 100 +                  \
     NERVE_VERSION_PATCH)

#endif
