// See CAvahiCore.h for why avahi-core is loaded with dlopen instead of linked.
#define _GNU_SOURCE
#include "CAvahiCore.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#define FUNCTIONS(X) \
    X(avahi_server_config_init) X(avahi_server_config_free) X(avahi_server_new) X(avahi_server_free) \
    X(avahi_server_get_state) X(avahi_server_get_host_name) X(avahi_server_set_host_name) X(avahi_server_errno) \
    X(avahi_s_entry_group_new) X(avahi_s_entry_group_free) X(avahi_s_entry_group_commit) \
    X(avahi_s_entry_group_reset) X(avahi_s_entry_group_is_empty) X(avahi_server_add_service_strlst) \
    X(avahi_server_update_service_txt_strlst) X(avahi_s_service_browser_new) X(avahi_s_service_browser_free) \
    X(avahi_s_service_resolver_new) X(avahi_s_service_resolver_free) X(avahi_set_log_function) X(avahi_key_new) X(avahi_key_unref) \
    X(avahi_s_record_browser_new) X(avahi_s_record_browser_free)

#define DECLARE(name) static __typeof__(name) *p_##name;
FUNCTIONS(DECLARE)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *load_error = NULL;

static void load(void) {
    void *lib = dlopen("libavahi-core.so.7", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib) lib = dlopen("libavahi-core.so", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib) {
        load_error = "libavahi-core is not installed (Debian package libavahi-core7)";
        return;
    }
#define RESOLVE(name)                                                   \
    p_##name = (__typeof__(name) *)dlsym(lib, #name);                   \
    if (!p_##name) {                                                    \
        load_error = "libavahi-core lacks " #name " (unsupported version)"; \
        return;                                                         \
    }
    FUNCTIONS(RESOLVE)
}

int lyre_avahi_core_load(const char **error) {
    pthread_once(&once, load);
    if (load_error) {
        if (error) *error = load_error;
        return -1;
    }
    return 0;
}

AvahiServerConfig *lyre_avahi_server_config_init(AvahiServerConfig *c) { return p_avahi_server_config_init(c); }
void lyre_avahi_server_config_free(AvahiServerConfig *c) { p_avahi_server_config_free(c); }
AvahiServer *lyre_avahi_server_new(const AvahiPoll *api, const AvahiServerConfig *sc, AvahiServerCallback callback,
                                   void *userdata, int *error) {
    return p_avahi_server_new(api, sc, callback, userdata, error);
}
void lyre_avahi_server_free(AvahiServer *s) { p_avahi_server_free(s); }
AvahiServerState lyre_avahi_server_get_state(AvahiServer *s) { return p_avahi_server_get_state(s); }
const char *lyre_avahi_server_get_host_name(AvahiServer *s) { return p_avahi_server_get_host_name(s); }
int lyre_avahi_server_set_host_name(AvahiServer *s, const char *n) { return p_avahi_server_set_host_name(s, n); }
int lyre_avahi_server_errno(AvahiServer *s) { return p_avahi_server_errno(s); }

AvahiSEntryGroup *lyre_avahi_s_entry_group_new(AvahiServer *s, AvahiSEntryGroupCallback callback, void *userdata) {
    return p_avahi_s_entry_group_new(s, callback, userdata);
}
void lyre_avahi_s_entry_group_free(AvahiSEntryGroup *g) { p_avahi_s_entry_group_free(g); }
int lyre_avahi_s_entry_group_commit(AvahiSEntryGroup *g) { return p_avahi_s_entry_group_commit(g); }
void lyre_avahi_s_entry_group_reset(AvahiSEntryGroup *g) { p_avahi_s_entry_group_reset(g); }
int lyre_avahi_s_entry_group_is_empty(AvahiSEntryGroup *g) { return p_avahi_s_entry_group_is_empty(g); }
int lyre_avahi_server_add_service_strlst(AvahiServer *s, AvahiSEntryGroup *g, AvahiIfIndex interface,
                                         AvahiProtocol protocol, AvahiPublishFlags flags, const char *name,
                                         const char *type, const char *domain, const char *host, uint16_t port,
                                         AvahiStringList *strlst) {
    return p_avahi_server_add_service_strlst(s, g, interface, protocol, flags, name, type, domain, host, port, strlst);
}
int lyre_avahi_server_update_service_txt_strlst(AvahiServer *s, AvahiSEntryGroup *g, AvahiIfIndex interface,
                                                AvahiProtocol protocol, AvahiPublishFlags flags, const char *name,
                                                const char *type, const char *domain, AvahiStringList *strlst) {
    return p_avahi_server_update_service_txt_strlst(s, g, interface, protocol, flags, name, type, domain, strlst);
}
AvahiSServiceBrowser *lyre_avahi_s_service_browser_new(AvahiServer *s, AvahiIfIndex interface, AvahiProtocol protocol,
                                                       const char *type, const char *domain, AvahiLookupFlags flags,
                                                       AvahiSServiceBrowserCallback callback, void *userdata) {
    return p_avahi_s_service_browser_new(s, interface, protocol, type, domain, flags, callback, userdata);
}
void lyre_avahi_s_service_browser_free(AvahiSServiceBrowser *b) { p_avahi_s_service_browser_free(b); }
AvahiSServiceResolver *lyre_avahi_s_service_resolver_new(AvahiServer *s, AvahiIfIndex interface,
                                                         AvahiProtocol protocol, const char *name, const char *type,
                                                         const char *domain, AvahiProtocol aprotocol,
                                                         AvahiLookupFlags flags,
                                                         AvahiSServiceResolverCallback callback, void *userdata) {
    return p_avahi_s_service_resolver_new(s, interface, protocol, name, type, domain, aprotocol, flags, callback,
                                          userdata);
}
void lyre_avahi_s_service_resolver_free(AvahiSServiceResolver *r) { p_avahi_s_service_resolver_free(r); }
void lyre_avahi_set_log_function(AvahiLogFunction function) { p_avahi_set_log_function(function); }
AvahiKey *lyre_avahi_key_new(const char *name, uint16_t clazz, uint16_t type) {
    return p_avahi_key_new(name, clazz, type);
}
void lyre_avahi_key_unref(AvahiKey *k) { p_avahi_key_unref(k); }
AvahiSRecordBrowser *lyre_avahi_s_record_browser_new(AvahiServer *server, AvahiIfIndex interface,
                                                     AvahiProtocol protocol, AvahiKey *key, AvahiLookupFlags flags,
                                                     AvahiSRecordBrowserCallback callback, void *userdata) {
    return p_avahi_s_record_browser_new(server, interface, protocol, key, flags, callback, userdata);
}
void lyre_avahi_s_record_browser_free(AvahiSRecordBrowser *b) { p_avahi_s_record_browser_free(b); }
AvahiStringList *lyre_avahi_record_txt(AvahiRecord *record) {
    return record->key->type == AVAHI_DNS_TYPE_TXT ? record->data.txt.string_list : NULL;
}
