/* nerve: real-time inter-process communication through shared memory.
 * The umbrella header: includes every public C header. */
#ifndef NERVE_NERVE_H
#define NERVE_NERVE_H

#include "version.h"
#include "errors.h"
#include "clock.h"
#include "size.h"
#include "chan.h"
#include "bridge.h"
#include "rt.h"

#endif
