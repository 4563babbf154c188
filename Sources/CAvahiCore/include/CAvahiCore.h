// avahi-core (Debian libavahi-core-dev), loaded at run time.
//
// Why this shim exists: libavahi-core exports an internal `avahi_entry_group_free` with a different
// signature from libavahi-client's public one, and both libraries call theirs through the PLT. Linked into
// one process, whichever binds second calls the other's function and crashes. So avahi-core is never
// linked: `lyre_avahi_core_load` dlopen()s it with RTLD_LOCAL | RTLD_DEEPBIND (its own symbols first, none
// exported to the process), and the `lyre_`-prefixed functions below forward to it. Types and constants
// come from avahi's headers as usual.
#pragma once
#include <avahi-core/core.h>
#include <avahi-core/lookup.h>
#include <avahi-core/publish.h>
#include <avahi-core/log.h>
#include <avahi-core/rr.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>

/// Sends avahi-core's log lines to `function` instead of stderr (avahi_set_log_function).
void lyre_avahi_set_log_function(AvahiLogFunction function);

/// Loads libavahi-core once. Returns 0, or -1 with a static message in *error.
int lyre_avahi_core_load(const char **error);

AvahiServerConfig *lyre_avahi_server_config_init(AvahiServerConfig *c);
void lyre_avahi_server_config_free(AvahiServerConfig *c);
AvahiServer *lyre_avahi_server_new(const AvahiPoll *api, const AvahiServerConfig *sc, AvahiServerCallback callback,
                                   void *userdata, int *error);
void lyre_avahi_server_free(AvahiServer *s);
AvahiServerState lyre_avahi_server_get_state(AvahiServer *s);
const char *lyre_avahi_server_get_host_name(AvahiServer *s);
int lyre_avahi_server_set_host_name(AvahiServer *s, const char *host_name);
int lyre_avahi_server_errno(AvahiServer *s);

AvahiSEntryGroup *lyre_avahi_s_entry_group_new(AvahiServer *s, AvahiSEntryGroupCallback callback, void *userdata);
void lyre_avahi_s_entry_group_free(AvahiSEntryGroup *g);
int lyre_avahi_s_entry_group_commit(AvahiSEntryGroup *g);
void lyre_avahi_s_entry_group_reset(AvahiSEntryGroup *g);
int lyre_avahi_s_entry_group_is_empty(AvahiSEntryGroup *g);
int lyre_avahi_server_add_service_strlst(AvahiServer *s, AvahiSEntryGroup *g, AvahiIfIndex interface,
                                         AvahiProtocol protocol, AvahiPublishFlags flags, const char *name,
                                         const char *type, const char *domain, const char *host, uint16_t port,
                                         AvahiStringList *strlst);
int lyre_avahi_server_update_service_txt_strlst(AvahiServer *s, AvahiSEntryGroup *g, AvahiIfIndex interface,
                                                AvahiProtocol protocol, AvahiPublishFlags flags, const char *name,
                                                const char *type, const char *domain, AvahiStringList *strlst);

AvahiSServiceBrowser *lyre_avahi_s_service_browser_new(AvahiServer *s, AvahiIfIndex interface, AvahiProtocol protocol,
                                                       const char *type, const char *domain, AvahiLookupFlags flags,
                                                       AvahiSServiceBrowserCallback callback, void *userdata);
void lyre_avahi_s_service_browser_free(AvahiSServiceBrowser *b);
AvahiSServiceResolver *lyre_avahi_s_service_resolver_new(AvahiServer *s, AvahiIfIndex interface,
                                                         AvahiProtocol protocol, const char *name, const char *type,
                                                         const char *domain, AvahiProtocol aprotocol,
                                                         AvahiLookupFlags flags,
                                                         AvahiSServiceResolverCallback calback, void *userdata);
void lyre_avahi_s_service_resolver_free(AvahiSServiceResolver *r);

AvahiKey *lyre_avahi_key_new(const char *name, uint16_t clazz, uint16_t type);
void lyre_avahi_key_unref(AvahiKey *k);
AvahiSRecordBrowser *lyre_avahi_s_record_browser_new(AvahiServer *server, AvahiIfIndex interface,
                                                     AvahiProtocol protocol, AvahiKey *key, AvahiLookupFlags flags,
                                                     AvahiSRecordBrowserCallback callback, void *userdata);
void lyre_avahi_s_record_browser_free(AvahiSRecordBrowser *b);

/// The TXT string list of a TXT record (the C union, which Swift cannot reach by name).
AvahiStringList *lyre_avahi_record_txt(AvahiRecord *record);
