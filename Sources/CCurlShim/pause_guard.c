// URLSession on Linux (FoundationNetworking) pauses a file upload whenever its file reader has no bytes ready, and
// resumes it with `try! curl_easy_pause(handle, CURLPAUSE_CONT)` when a read arrives. When the transfer ended in
// between (cancelled, or ended otherwise), libcurl has detached the handle from its connection and answers
// CURLE_BAD_FUNCTION_ARGUMENT (43), and the `try!` ends the process. URLSessionEngine no longer uploads files that
// way on Linux; other code in the process (the app's own URLSession calls) may.
//
// The guard below stands in front of libcurl's curl_easy_pause: it is defined under the versioned name that
// FoundationNetworking refers to (curl_easy_pause@CURL_OPENSSL_4), so the linker exports it from the program, and the
// dynamic linker binds FoundationNetworking's calls to it (the program is searched before the libraries); in a program
// with FoundationNetworking linked in statically, the calls bind to it directly. It calls libcurl's own function, and
// changes one answer only: a resume (no pause bits) that FoundationNetworking asked for, of a handle without a
// connection, succeeds, as there is nothing left to resume. Every other caller, and every other answer, is libcurl's.
// It is weak, so that a program that links libcurl statically keeps libcurl's function rather than failing to link.
// Linkers that do not export it (lld does not) leave FoundationNetworking's calls to libcurl, as before; the test
// `thePauseGuardIsBoundAndAnswersOtherCallersAsLibcurlDoes` checks that the package's own build binds the guard.
#if defined(__linux__)
#define _GNU_SOURCE
#include "CCurlShim.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>

typedef int (*sb_pause_function)(void *, int);

enum { sb_bad_function_argument = 43 };

/// libcurl's curl_easy_pause: from the libcurl FoundationNetworking loads (by its soname), else the next definition
/// after this one. NULL when there is none (then nothing can have called this one for libcurl's sake either).
static sb_pause_function sb_libcurl_pause(void) {
    static _Atomic(sb_pause_function) resolved = NULL;
    sb_pause_function found = atomic_load_explicit(&resolved, memory_order_acquire);
    if (found) return found;
    static const char *sonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4", NULL};
    for (int i = 0; sonames[i] && !found; i++) {
        void *library = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
        if (library) *(void **)(&found) = dlsym(library, "curl_easy_pause");
    }
    if (!found) *(void **)(&found) = dlsym(RTLD_NEXT, "curl_easy_pause");
    if (found) atomic_store_explicit(&resolved, found, memory_order_release);
    return found;
}

/// Whether the code at `address` is FoundationNetworking's: in its shared library, or in the program when the
/// program has it linked in (no libFoundationNetworking.so is loaded).
static int sb_is_foundation_networking(const void *address) {
    Dl_info caller;
    if (!dladdr(address, &caller) || !caller.dli_fname) return 0;
    if (strstr(caller.dli_fname, "FoundationNetworking")) return 1;
    void *shared = dlopen("libFoundationNetworking.so", RTLD_LAZY | RTLD_NOLOAD);
    if (shared) {
        dlclose(shared);
        return 0;
    }
    Dl_info program;
    const void *entry = (const void *)getauxval(AT_ENTRY);
    return entry && dladdr(entry, &program) && program.dli_fbase == caller.dli_fbase;
}

__attribute__((weak, visibility("default"), noinline)) int sb_pause_guard(void *handle, int bitmask) {
    sb_pause_function pause = sb_libcurl_pause();
    if (!pause) return sb_bad_function_argument;
    int result = pause(handle, bitmask);
    if (result == sb_bad_function_argument && bitmask == 0 &&
        sb_is_foundation_networking(__builtin_return_address(0))) {
        return 0;
    }
    return result;
}
// FoundationNetworking refers to the versioned name (`nm -D libFoundationNetworking.so`); the linker exports a
// definition from the program only when it carries the version asked for.
__asm__(".symver sb_pause_guard, curl_easy_pause@@CURL_OPENSSL_4");

static void sb_pause_guard_marker(void) {}

int sb_pause_guard_is_active(void) {
    void *bound = dlsym(RTLD_DEFAULT, "curl_easy_pause");
    Dl_info definition, here;
    if (!bound || !dladdr(bound, &definition) || !dladdr((const void *)&sb_pause_guard_marker, &here)) return 0;
    return definition.dli_fbase == here.dli_fbase;
}

int sb_pause_as_the_process_binds(SBCurl *easy, int bitmask) {
    sb_pause_function bound;
    *(void **)(&bound) = dlsym(RTLD_DEFAULT, "curl_easy_pause");
    return bound ? bound(easy, bitmask) : -1;
}
#else
#include "CCurlShim.h"

int sb_pause_guard_is_active(void) { return 0; }
int sb_pause_as_the_process_binds(SBCurl *easy, int bitmask) { return -1; }
#endif
