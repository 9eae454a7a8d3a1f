// For pthread_setname_np on Linux.
#define _GNU_SOURCE
#include "CCurlShim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// The few declarations of curl.h that this shim needs; the layouts are part of libcurl's stable ABI.
typedef struct {
    int age;
    const char *version;
    unsigned int version_num;
    const char *host;
    int features;
} sb_version_info;

typedef struct {
    const char *name;
    int id;
    int type;
    unsigned int flags;
} sb_easy_option;

typedef struct {
    int msg;
    void *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
} sb_multi_message;

struct sb_slist {
    char *data;
    struct sb_slist *next;
};

typedef struct {
    int num_of_certs;
    struct sb_slist **certinfo;
} sb_certinfo;

static struct {
    int loaded;
    int (*global_init)(long);
    sb_version_info *(*version_info)(int);
    const sb_easy_option *(*option_by_name)(const char *);
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *);
    void (*easy_reset)(void *);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_getinfo)(void *, int, ...);
    const char *(*easy_strerror)(int);
    int (*easy_pause)(void *, int);
    void *(*slist_append)(void *, const char *);
    void (*slist_free_all)(void *);
    void *(*multi_init)(void);
    int (*multi_cleanup)(void *);
    int (*multi_setopt)(void *, int, ...);
    int (*multi_add_handle)(void *, void *);
    int (*multi_remove_handle)(void *, void *);
    int (*multi_perform)(void *, int *);
    int (*multi_poll)(void *, void *, unsigned int, int, int *);
    int (*multi_wakeup)(void *);
    sb_multi_message *(*multi_info_read)(void *, int *);
} curl;

#define RESOLVE(field, symbol)                                                                      \
    do {                                                                                              \
        *(void **)(&curl.field) = dlsym(library, symbol);                                            \
        if (!curl.field) {                                                                            \
            snprintf(error, error_length, "%s has no %s (too old? 7.68 or newer is needed)", path, symbol); \
            return 2;                                                                                 \
        }                                                                                             \
    } while (0)

int sb_curl_load(char *error, size_t error_length) {
    if (curl.loaded) return 0;
    static const char *candidates[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4",
                                       "/usr/lib/libcurl.4.dylib", "libcurl.4.dylib", NULL};
    void *library = NULL;
    const char *path = NULL;
    for (int i = 0; candidates[i] && !library; i++) {
        library = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        path = candidates[i];
    }
    if (!library) {
        snprintf(error, error_length, "libcurl is not installed (looked for libcurl.so.4 and libcurl.4.dylib)");
        return 1;
    }
    RESOLVE(global_init, "curl_global_init");
    RESOLVE(version_info, "curl_version_info");
    RESOLVE(easy_init, "curl_easy_init");
    RESOLVE(easy_cleanup, "curl_easy_cleanup");
    RESOLVE(easy_reset, "curl_easy_reset");
    RESOLVE(easy_setopt, "curl_easy_setopt");
    RESOLVE(easy_getinfo, "curl_easy_getinfo");
    RESOLVE(easy_strerror, "curl_easy_strerror");
    RESOLVE(easy_pause, "curl_easy_pause");
    RESOLVE(slist_append, "curl_slist_append");
    RESOLVE(slist_free_all, "curl_slist_free_all");
    RESOLVE(multi_init, "curl_multi_init");
    RESOLVE(multi_cleanup, "curl_multi_cleanup");
    RESOLVE(multi_setopt, "curl_multi_setopt");
    RESOLVE(multi_add_handle, "curl_multi_add_handle");
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle");
    RESOLVE(multi_perform, "curl_multi_perform");
    RESOLVE(multi_poll, "curl_multi_poll");
    RESOLVE(multi_wakeup, "curl_multi_wakeup");
    RESOLVE(multi_info_read, "curl_multi_info_read");
    *(void **)(&curl.option_by_name) = dlsym(library, "curl_easy_option_by_name");
    if (curl.global_init(3 /* CURL_GLOBAL_ALL */) != 0) {
        snprintf(error, error_length, "curl_global_init failed");
        return 3;
    }
    curl.loaded = 1;
    return 0;
}

const char *sb_curl_version(void) { return curl.version_info(0)->version; }
unsigned int sb_curl_version_number(void) { return curl.version_info(0)->version_num; }
int sb_curl_features(void) { return curl.version_info(0)->features; }

int sb_curl_option_id(const char *name) {
    if (!curl.option_by_name) return -1;
    const sb_easy_option *option = curl.option_by_name(name);
    return option ? option->id : -1;
}

SBCurl *sb_easy_init(void) { return curl.easy_init(); }
void sb_easy_cleanup(SBCurl *easy) { curl.easy_cleanup(easy); }
void sb_easy_reset(SBCurl *easy) { curl.easy_reset(easy); }
int sb_easy_setopt_long(SBCurl *easy, int option, long value) { return curl.easy_setopt(easy, option, value); }
int sb_easy_setopt_offset(SBCurl *easy, int option, int64_t value) { return curl.easy_setopt(easy, option, (int64_t)value); }
int sb_easy_setopt_pointer(SBCurl *easy, int option, const void *value) { return curl.easy_setopt(easy, option, value); }
int sb_easy_setopt_data_callback(SBCurl *easy, int option, SBDataCallback callback) {
    return curl.easy_setopt(easy, option, callback);
}
int sb_easy_setopt_progress_callback(SBCurl *easy, int option, SBProgressCallback callback) {
    return curl.easy_setopt(easy, option, callback);
}
int sb_easy_setopt_seek_callback(SBCurl *easy, int option, SBSeekCallback callback) {
    return curl.easy_setopt(easy, option, callback);
}
int sb_easy_setopt_prereq_callback(SBCurl *easy, int option, SBPrereqCallback callback) {
    return curl.easy_setopt(easy, option, callback);
}
const char *sb_easy_peer_certificate(SBCurl *easy, int index) {
    sb_certinfo *chain = NULL;
    if (curl.easy_getinfo(easy, 0x400000 + 34 /* CURLINFO_CERTINFO */, &chain) != 0 || !chain) return NULL;
    if (index < 0 || index >= chain->num_of_certs) return NULL;
    for (struct sb_slist *item = chain->certinfo[index]; item; item = item->next) {
        if (item->data && strncmp(item->data, "Cert:", 5) == 0) return item->data + 5;
    }
    return NULL;
}
int sb_easy_getinfo_long(SBCurl *easy, int info, long *value) { return curl.easy_getinfo(easy, info, value); }
int sb_easy_getinfo_string(SBCurl *easy, int info, const char **value) { return curl.easy_getinfo(easy, info, value); }
int sb_easy_getinfo_offset(SBCurl *easy, int info, int64_t *value) { return curl.easy_getinfo(easy, info, value); }
const char *sb_easy_strerror(int code) { return curl.easy_strerror(code); }
int sb_easy_pause(SBCurl *easy, int bitmask) { return curl.easy_pause(easy, bitmask); }

SBCurlList *sb_slist_append(SBCurlList *list, const char *text) { return curl.slist_append(list, text); }
void sb_slist_free_all(SBCurlList *list) { curl.slist_free_all(list); }

SBCurlMulti *sb_multi_init(void) { return curl.multi_init(); }
void sb_multi_cleanup(SBCurlMulti *multi) { curl.multi_cleanup(multi); }
int sb_multi_setopt_long(SBCurlMulti *multi, int option, long value) { return curl.multi_setopt(multi, option, value); }
int sb_multi_add_handle(SBCurlMulti *multi, SBCurl *easy) { return curl.multi_add_handle(multi, easy); }
int sb_multi_remove_handle(SBCurlMulti *multi, SBCurl *easy) { return curl.multi_remove_handle(multi, easy); }
int sb_multi_perform(SBCurlMulti *multi, int *running) { return curl.multi_perform(multi, running); }
int sb_multi_poll(SBCurlMulti *multi, int timeout_ms, int *descriptors) {
    return curl.multi_poll(multi, NULL, 0, timeout_ms, descriptors);
}
int sb_multi_wakeup(SBCurlMulti *multi) { return curl.multi_wakeup(multi); }

int sb_multi_next_done(SBCurlMulti *multi, SBCurl **easy, int *result) {
    int left = 0;
    sb_multi_message *message;
    while ((message = curl.multi_info_read(multi, &left)) != NULL) {
        if (message->msg == 1 /* CURLMSG_DONE */) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

void sb_name_current_thread(const char *name) {
#if defined(__APPLE__)
    pthread_setname_np(name);
#else
    pthread_setname_np(pthread_self(), name);
#endif
}
