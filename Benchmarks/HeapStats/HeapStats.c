#include "HeapStats.h"

#include <stdlib.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>

long long heap_stats_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
}

void heap_stats_trim(void) {
    malloc_trim(0);
}
#else
long long heap_stats_in_use(void) {
    return -1;
}

void heap_stats_trim(void) {}
#endif
