// A minimal, header-free binding to the system libcurl, loaded at run time with dlopen: no curl headers and no
// -lcurl at build time. Variadic curl calls go through typed wrappers here, never from Swift.
#ifndef SWITCHBOARD_CCURLSHIM_H
#define SWITCHBOARD_CCURLSHIM_H

#include <stddef.h>
#include <stdint.h>

typedef void SBCurl;
typedef void SBCurlMulti;
typedef struct SBCurlList SBCurlList;

typedef size_t (*SBDataCallback)(char *data, size_t size, size_t count, void *context);
typedef int (*SBSeekCallback)(void *context, int64_t offset, int origin);
typedef int (*SBProgressCallback)(void *context, int64_t downloadTotal, int64_t downloadNow, int64_t uploadTotal,
                                  int64_t uploadNow);
/// CURLOPT_PREREQFUNCTION's callback: called once the connection (and its TLS handshake) is up, before the request
/// is sent; 0 lets it go, 1 aborts the transfer.
typedef int (*SBPrereqCallback)(void *context, char *primary_ip, char *local_ip, int primary_port, int local_port);

/// Loads libcurl (libcurl.so.4, libcurl-gnutls.so.4, or /usr/lib/libcurl.4.dylib), resolves the functions used and
/// calls curl_global_init. Returns 0 on success; otherwise writes why into `error`.
int sb_curl_load(char *error, size_t error_length);

/// The library's version text and number (e.g. 0x075801 for 7.88.1), and its feature bits.
const char *sb_curl_version(void);
unsigned int sb_curl_version_number(void);
int sb_curl_features(void);

/// The id libcurl gives an option name (curl_easy_option_by_name, 7.73+), or -1 when unknown or unavailable.
int sb_curl_option_id(const char *name);

SBCurl *sb_easy_init(void);
void sb_easy_cleanup(SBCurl *easy);
/// Resets every option of a handle to its default, keeping its caches, so that it serves the next transfer.
void sb_easy_reset(SBCurl *easy);
int sb_easy_setopt_long(SBCurl *easy, int option, long value);
int sb_easy_setopt_offset(SBCurl *easy, int option, int64_t value);
int sb_easy_setopt_pointer(SBCurl *easy, int option, const void *value);
int sb_easy_setopt_data_callback(SBCurl *easy, int option, SBDataCallback callback);
int sb_easy_setopt_progress_callback(SBCurl *easy, int option, SBProgressCallback callback);
int sb_easy_setopt_seek_callback(SBCurl *easy, int option, SBSeekCallback callback);
int sb_easy_setopt_prereq_callback(SBCurl *easy, int option, SBPrereqCallback callback);
int sb_easy_getinfo_long(SBCurl *easy, int info, long *value);
int sb_easy_getinfo_string(SBCurl *easy, int info, const char **value);
/// For CURLINFO_OFF_T values (curl_off_t is 64 bits on every platform libcurl supports).
int sb_easy_getinfo_offset(SBCurl *easy, int info, int64_t *value);
/// The PEM text of the certificate at `index` of the chain the server presented on this transfer's connection (from
/// CURLINFO_CERTINFO, gathered with CURLOPT_CERTINFO at the handshake), or NULL past its end.
const char *sb_easy_peer_certificate(SBCurl *easy, int index);
const char *sb_easy_strerror(int code);
/// curl_easy_pause: 0 (CURLPAUSE_CONT) resumes both directions. Call it on the thread that drives the handle.
int sb_easy_pause(SBCurl *easy, int bitmask);

SBCurlList *sb_slist_append(SBCurlList *list, const char *text);
void sb_slist_free_all(SBCurlList *list);

SBCurlMulti *sb_multi_init(void);
/// Closes the multi handle's connections and frees it; every easy handle must have been removed from it first.
void sb_multi_cleanup(SBCurlMulti *multi);
int sb_multi_setopt_long(SBCurlMulti *multi, int option, long value);
int sb_multi_add_handle(SBCurlMulti *multi, SBCurl *easy);
int sb_multi_remove_handle(SBCurlMulti *multi, SBCurl *easy);
int sb_multi_perform(SBCurlMulti *multi, int *running);
int sb_multi_poll(SBCurlMulti *multi, int timeout_ms, int *descriptors);
int sb_multi_wakeup(SBCurlMulti *multi);
/// The next finished transfer, if any: returns 1 and fills `easy` and `result`, or 0 when none is left.
int sb_multi_next_done(SBCurlMulti *multi, SBCurl **easy, int *result);

/// Names the calling thread (at most 15 bytes on Linux), as `top -H` and debuggers show it. Not libcurl's, but C:
/// `pthread_setname_np` is not visible from Swift on Linux, and Foundation's `Thread.name`, set from the new thread
/// itself, is sometimes not applied there (it names the thread through a handle the starting thread may not have
/// stored yet).
void sb_name_current_thread(const char *name);

#endif
