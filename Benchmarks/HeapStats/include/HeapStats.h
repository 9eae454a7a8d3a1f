#ifndef SWITCHBOARD_HEAP_STATS_H
#define SWITCHBOARD_HEAP_STATS_H

#include <stddef.h>

/// Bytes the C allocator has handed out and not had back (glibc's mallinfo2), or -1 where it cannot tell.
long long heap_stats_in_use(void);

/// Gives the pages of freed memory the C allocator keeps back to the system (glibc's malloc_trim); nothing elsewhere.
void heap_stats_trim(void);

#endif
