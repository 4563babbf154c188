#include "CPulseShim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <pulse/pulseaudio.h>
#include <pulse/simple.h>

// libpulse is opened when `lyre sink` first connects or records, not linked: linked, it and the libraries it
// loads that lyre has no other use for (18 with its own two: libpulsecommon, libsndfile and its codecs, X11's
// client libraries, ...) cost every lyre command that never speaks to a sound server, `lyre play` and
// `lyre devices` among them, 1.7 MB of memory, 0.3 MB of it dirty: a C program that does nothing, linked with
// lyre's libraries, maps 6,960 kB (900 kB private dirty) with libpulse's two and 5,304 kB (572 kB) without.
// The sonames are those of Debian's libpulse0.
#define LYRE_PULSE_FUNCTIONS(X) \
    X(pa_context_connect) \
    X(pa_context_disconnect) \
    X(pa_context_errno) \
    X(pa_context_get_server_info) \
    X(pa_context_get_sink_info_by_index) \
    X(pa_context_get_sink_info_by_name) \
    X(pa_context_get_sink_info_list) \
    X(pa_context_get_sink_input_info) \
    X(pa_context_get_sink_input_info_list) \
    X(pa_context_get_state) \
    X(pa_context_load_module) \
    X(pa_context_move_sink_input_by_name) \
    X(pa_context_new) \
    X(pa_context_set_sink_volume_by_index) \
    X(pa_context_set_state_callback) \
    X(pa_context_set_subscribe_callback) \
    X(pa_context_subscribe) \
    X(pa_context_unload_module) \
    X(pa_context_unref) \
    X(pa_cvolume_avg) \
    X(pa_cvolume_set) \
    X(pa_operation_unref) \
    X(pa_proplist_gets) \
    X(pa_strerror) \
    X(pa_sw_volume_from_dB) \
    X(pa_sw_volume_to_dB) \
    X(pa_threaded_mainloop_free) \
    X(pa_threaded_mainloop_get_api) \
    X(pa_threaded_mainloop_lock) \
    X(pa_threaded_mainloop_new) \
    X(pa_threaded_mainloop_signal) \
    X(pa_threaded_mainloop_start) \
    X(pa_threaded_mainloop_stop) \
    X(pa_threaded_mainloop_unlock) \
    X(pa_threaded_mainloop_wait) \
    X(pa_stream_connect_playback) \
    X(pa_stream_cork) \
    X(pa_stream_disconnect) \
    X(pa_stream_get_device_index) \
    X(pa_stream_get_state) \
    X(pa_stream_get_timing_info) \
    X(pa_stream_new) \
    X(pa_stream_set_state_callback) \
    X(pa_stream_set_underflow_callback) \
    X(pa_stream_set_write_callback) \
    X(pa_stream_unref) \
    X(pa_stream_update_timing_info) \
    X(pa_stream_writable_size) \
    X(pa_stream_write) \
    X(pa_simple_free) \
    X(pa_simple_new) \
    X(pa_simple_read)

#define LYRE_FIELD(name) __typeof__(name) *name;
static struct { LYRE_PULSE_FUNCTIONS(LYRE_FIELD) } lp;

static pthread_once_t lp_once = PTHREAD_ONCE_INIT;
static char lp_error[256];

static void lp_load(void) {
    // libpulse-simple needs libpulse, so it is opened first: a missing one is named as itself.
    const char *sonames[] = {"libpulse.so.0", "libpulse-simple.so.0"};
    void *handles[2];
    for (int i = 0; i < 2; i++) {
        handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            snprintf(lp_error, sizeof lp_error, "%s is missing (install Debian's libpulse0: lyre sink and lyred's PulseAudio output need it)", sonames[i]);
            return;
        }
    }
#define LYRE_RESOLVE(name) \
    for (int i = 0; i < 2 && !lp.name; i++) lp.name = (__typeof__(name) *)dlsym(handles[i], #name); \
    if (!lp.name) { snprintf(lp_error, sizeof lp_error, "libpulse lacks %s", #name); return; }
    LYRE_PULSE_FUNCTIONS(LYRE_RESOLVE)
}

// 0 when libpulse is loaded, else -1 with the reason in `error`.
static int lp_ready(char *error, size_t error_size) {
    pthread_once(&lp_once, lp_load);
    if (!lp_error[0]) return 0;
    snprintf(error, error_size, "%s", lp_error);
    return -1;
}

int lyre_pulse_open_library(char *error, size_t error_size) { return lp_ready(error, error_size); }

struct LyrePulse {
    pa_threaded_mainloop *loop;
    pa_context *context;
    LyrePulseInputCallback callback;
    LyrePulseSinkCallback sink_callback;
    void *user;
    int ready;          // connected: a failure from now on is the server going away
    int lost_reported;
};

// One request's answer, filled in by its callback on the loop's thread.
typedef struct {
    LyrePulse *pulse;
    int done;
    int success;
    uint32_t index;
    char *name;
    size_t name_size;
    const char *avoid_prefix;
    char first_other[256];
} Answer;

static void signal_loop(LyrePulse *p) { lp.pa_threaded_mainloop_signal(p->loop, 0); }

static void context_state(pa_context *c, void *user) {
    LyrePulse *p = user;
    pa_context_state_t state = lp.pa_context_get_state(c);
    if ((state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED) && p->ready && !p->lost_reported && p->callback) {
        p->lost_reported = 1;
        p->callback(p->user, UINT32_MAX, UINT32_MAX, NULL, NULL, 0);
    }
    signal_loop(p);
}

static void report_input(pa_context *c, const pa_sink_input_info *info, int eol, void *user) {
    (void)c;
    LyrePulse *p = user;
    if (eol || !info) return;
    const char *role = lp.pa_proplist_gets(info->proplist, PA_PROP_MEDIA_ROLE);
    const char *app = lp.pa_proplist_gets(info->proplist, PA_PROP_APPLICATION_NAME);
    const char *pid_text = lp.pa_proplist_gets(info->proplist, PA_PROP_APPLICATION_PROCESS_ID);
    uint32_t pid = pid_text ? (uint32_t)strtoul(pid_text, NULL, 10) : 0;
    p->callback(p->user, info->index, info->sink, role, app, pid);
}

static void report_sink(pa_context *c, const pa_sink_info *info, int eol, void *user) {
    (void)c;
    LyrePulse *p = user;
    if (eol || !info) return;
    p->sink_callback(p->user, info->index, lp.pa_sw_volume_to_dB(lp.pa_cvolume_avg(&info->volume)), info->mute);
}

static void subscription(pa_context *c, pa_subscription_event_type_t type, uint32_t index, void *user) {
    LyrePulse *p = user;
    if ((type & PA_SUBSCRIPTION_EVENT_FACILITY_MASK) == PA_SUBSCRIPTION_EVENT_SINK) {
        if ((type & PA_SUBSCRIPTION_EVENT_TYPE_MASK) == PA_SUBSCRIPTION_EVENT_REMOVE) return;
        pa_operation *o = lp.pa_context_get_sink_info_by_index(c, index, report_sink, p);
        if (o) lp.pa_operation_unref(o);
        return;
    }
    if ((type & PA_SUBSCRIPTION_EVENT_FACILITY_MASK) != PA_SUBSCRIPTION_EVENT_SINK_INPUT) return;
    if ((type & PA_SUBSCRIPTION_EVENT_TYPE_MASK) == PA_SUBSCRIPTION_EVENT_REMOVE) {
        p->callback(p->user, index, UINT32_MAX, NULL, NULL, 0);
        return;
    }
    pa_operation *o = lp.pa_context_get_sink_input_info(c, index, report_input, p);
    if (o) lp.pa_operation_unref(o);
}

// Waits (the loop locked) for `answer` to be done, or the connection to fail.
static int wait_for(LyrePulse *p, pa_operation *o, Answer *answer) {
    if (!o) return lp.pa_context_errno(p->context);
    while (!answer->done && PA_CONTEXT_IS_GOOD(lp.pa_context_get_state(p->context)))
        lp.pa_threaded_mainloop_wait(p->loop);
    lp.pa_operation_unref(o);
    if (!answer->done) return PA_ERR_CONNECTIONTERMINATED;
    return answer->success ? 0 : lp.pa_context_errno(p->context);
}

LyrePulse *lyre_pulse_connect(const char *client_name, LyrePulseInputCallback callback, LyrePulseSinkCallback sink_callback,
                              void *user, char *error, size_t error_size) {
    if (lp_ready(error, error_size) != 0) return NULL;
    LyrePulse *p = calloc(1, sizeof *p);
    if (!p) { snprintf(error, error_size, "out of memory"); return NULL; }
    p->callback = callback;
    p->sink_callback = sink_callback;
    p->user = user;
    p->loop = lp.pa_threaded_mainloop_new();
    if (!p->loop) { snprintf(error, error_size, "cannot make libpulse's main loop"); free(p); return NULL; }
    lp.pa_threaded_mainloop_lock(p->loop);
    p->context = lp.pa_context_new(lp.pa_threaded_mainloop_get_api(p->loop), client_name);
    int status = p->context ? 0 : PA_ERR_INTERNAL;
    if (status == 0) {
        lp.pa_context_set_state_callback(p->context, context_state, p);
        if (lp.pa_context_connect(p->context, NULL, PA_CONTEXT_NOAUTOSPAWN, NULL) < 0) status = lp.pa_context_errno(p->context);
    }
    if (status == 0 && lp.pa_threaded_mainloop_start(p->loop) < 0) status = PA_ERR_INTERNAL;
    while (status == 0) {
        pa_context_state_t state = lp.pa_context_get_state(p->context);
        if (state == PA_CONTEXT_READY) break;
        if (!PA_CONTEXT_IS_GOOD(state)) { status = lp.pa_context_errno(p->context); break; }
        lp.pa_threaded_mainloop_wait(p->loop);
    }
    if (status == 0) p->ready = 1;
    if (status == 0 && callback) {
        lp.pa_context_set_subscribe_callback(p->context, subscription, p);
        pa_operation *o = lp.pa_context_subscribe(p->context, PA_SUBSCRIPTION_MASK_SINK_INPUT | PA_SUBSCRIPTION_MASK_SINK, NULL, NULL);
        if (o) lp.pa_operation_unref(o);
        o = lp.pa_context_get_sink_input_info_list(p->context, report_input, p);
        if (o) lp.pa_operation_unref(o);
    }
    lp.pa_threaded_mainloop_unlock(p->loop);
    if (status != 0) {
        snprintf(error, error_size, "cannot reach the sound server: %s", lp.pa_strerror(status));
        p->callback = NULL;
        lyre_pulse_close(p);
        return NULL;
    }
    return p;
}

static void index_answer(pa_context *c, uint32_t index, void *user) {
    (void)c;
    Answer *a = user;
    a->index = index;
    a->success = index != PA_INVALID_INDEX;
    a->done = 1;
    signal_loop(a->pulse);
}

static void success_answer(pa_context *c, int success, void *user) {
    (void)c;
    Answer *a = user;
    a->success = success;
    a->done = 1;
    signal_loop(a->pulse);
}

int lyre_pulse_load_module(LyrePulse *p, const char *module, const char *arguments, uint32_t *module_index) {
    Answer a = {.pulse = p};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_load_module(p->context, module, arguments, index_answer, &a), &a);
    lp.pa_threaded_mainloop_unlock(p->loop);
    if (status == 0) *module_index = a.index;
    return status;
}

int lyre_pulse_unload_module(LyrePulse *p, uint32_t module_index) {
    Answer a = {.pulse = p};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_unload_module(p->context, module_index, success_answer, &a), &a);
    lp.pa_threaded_mainloop_unlock(p->loop);
    return status;
}

int lyre_pulse_move_input(LyrePulse *p, uint32_t input, const char *sink_name) {
    Answer a = {.pulse = p};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_move_sink_input_by_name(p->context, input, sink_name, success_answer, &a), &a);
    lp.pa_threaded_mainloop_unlock(p->loop);
    return status;
}

static void sink_index_answer(pa_context *c, const pa_sink_info *info, int eol, void *user) {
    (void)c;
    Answer *a = user;
    if (info && !eol) { a->index = info->index; a->success = 1; }
    if (eol) { a->done = 1; signal_loop(a->pulse); }
}

int lyre_pulse_sink_index(LyrePulse *p, const char *name, uint32_t *index) {
    Answer a = {.pulse = p};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_get_sink_info_by_name(p->context, name, sink_index_answer, &a), &a);
    lp.pa_threaded_mainloop_unlock(p->loop);
    if (status == 0) *index = a.index;
    return a.done && !a.success ? PA_ERR_NOENTITY : status;
}

static void server_answer(pa_context *c, const pa_server_info *info, void *user) {
    (void)c;
    Answer *a = user;
    if (info && info->default_sink_name) snprintf(a->name, a->name_size, "%s", info->default_sink_name);
    a->success = 1;
    a->done = 1;
    signal_loop(a->pulse);
}

static void other_sink_answer(pa_context *c, const pa_sink_info *info, int eol, void *user) {
    (void)c;
    Answer *a = user;
    if (info && !eol && !a->first_other[0] && strncmp(info->name, a->avoid_prefix, strlen(a->avoid_prefix)) != 0)
        snprintf(a->first_other, sizeof a->first_other, "%s", info->name);
    if (eol) { a->success = 1; a->done = 1; signal_loop(a->pulse); }
}

int lyre_pulse_local_sink(LyrePulse *p, const char *avoid_prefix, char *name, size_t size) {
    name[0] = 0;
    Answer a = {.pulse = p, .name = name, .name_size = size, .avoid_prefix = avoid_prefix};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_get_server_info(p->context, server_answer, &a), &a);
    if (status == 0 && (!name[0] || strncmp(name, avoid_prefix, strlen(avoid_prefix)) == 0)) {
        Answer b = {.pulse = p, .avoid_prefix = avoid_prefix};
        status = wait_for(p, lp.pa_context_get_sink_info_list(p->context, other_sink_answer, &b), &b);
        snprintf(name, size, "%s", b.first_other);
    }
    lp.pa_threaded_mainloop_unlock(p->loop);
    return status == 0 && !name[0] ? PA_ERR_NOENTITY : status;
}

static void server_name_answer(pa_context *c, const pa_server_info *info, void *user) {
    (void)c;
    Answer *a = user;
    if (info && info->server_name) snprintf(a->name, a->name_size, "%s", info->server_name);
    a->success = 1;
    a->done = 1;
    signal_loop(a->pulse);
}

int lyre_pulse_server_name(LyrePulse *p, char *name, size_t size) {
    name[0] = 0;
    Answer a = {.pulse = p, .name = name, .name_size = size};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_get_server_info(p->context, server_name_answer, &a), &a);
    lp.pa_threaded_mainloop_unlock(p->loop);
    return status;
}

int lyre_pulse_set_sink_volume(LyrePulse *p, uint32_t sink, double volume_db) {
    pa_cvolume volume;
    lp.pa_cvolume_set(&volume, 2, lp.pa_sw_volume_from_dB(volume_db));
    Answer a = {.pulse = p};
    lp.pa_threaded_mainloop_lock(p->loop);
    int status = wait_for(p, lp.pa_context_set_sink_volume_by_index(p->context, sink, &volume, success_answer, &a), &a);
    lp.pa_threaded_mainloop_unlock(p->loop);
    return status;
}

const char *lyre_pulse_strerror(int code) {
    pthread_once(&lp_once, lp_load);
    return lp_error[0] ? lp_error : lp.pa_strerror(code);
}

struct LyrePulseRecorder {
    pa_simple *simple;
};

LyrePulseRecorder *lyre_pulse_record(const char *client_name, const char *stream_name, const char *source,
                                     uint32_t fragment_bytes, char *error, size_t error_size) {
    if (lp_ready(error, error_size) != 0) return NULL;
    LyrePulseRecorder *r = calloc(1, sizeof *r);
    if (!r) { snprintf(error, error_size, "out of memory"); return NULL; }
    pa_sample_spec spec = {.format = PA_SAMPLE_FLOAT32LE, .rate = 48000, .channels = 2};
    pa_buffer_attr attributes = {.maxlength = UINT32_MAX, .tlength = UINT32_MAX, .prebuf = UINT32_MAX,
                                 .minreq = UINT32_MAX, .fragsize = fragment_bytes};
    int status = 0;
    r->simple = lp.pa_simple_new(NULL, client_name, PA_STREAM_RECORD, source, stream_name, &spec, NULL, &attributes, &status);
    if (!r->simple) {
        snprintf(error, error_size, "%s", lp.pa_strerror(status));
        free(r);
        return NULL;
    }
    return r;
}

int lyre_pulse_record_read(LyrePulseRecorder *r, void *data, size_t bytes) {
    int status = 0;
    return lp.pa_simple_read(r->simple, data, bytes, &status) < 0 ? (status ? status : PA_ERR_UNKNOWN) : 0;
}

void lyre_pulse_record_free(LyrePulseRecorder *r) {
    if (!r) return;
    lp.pa_simple_free(r->simple);
    free(r);
}

struct LyrePulsePlayer {
    LyrePulse *pulse;
    pa_stream *stream;
    uint32_t underflows;
    int timing_pending;  // a timing update asked for and not yet answered (libpulse takes a few at once at most)
};

static void player_signal(pa_stream *s, void *user) {
    (void)s;
    LyrePulsePlayer *player = user;
    signal_loop(player->pulse);
}

static void player_request(pa_stream *s, size_t bytes, void *user) {
    (void)bytes;
    player_signal(s, user);
}

static void player_underflow(pa_stream *s, void *user) {
    LyrePulsePlayer *player = user;
    player->underflows++;
    player_signal(s, user);
}

static void player_timing(pa_stream *s, int success, void *user) {
    (void)success;
    LyrePulsePlayer *player = user;
    player->timing_pending = 0;
    player_signal(s, user);
}

static void player_success(pa_stream *s, int success, void *user) {
    (void)s;
    Answer *a = user;
    a->success = success;
    a->done = 1;
    signal_loop(a->pulse);
}

LyrePulsePlayer *lyre_pulse_player_new(const char *client_name, const char *stream_name, const char *sink, uint32_t buffer_bytes,
                                       uint32_t block_bytes, char *error, size_t error_size) {
    LyrePulse *pulse = lyre_pulse_connect(client_name, NULL, NULL, NULL, error, error_size);
    if (!pulse) return NULL;
    LyrePulsePlayer *player = calloc(1, sizeof *player);
    if (!player) { snprintf(error, error_size, "out of memory"); lyre_pulse_close(pulse); return NULL; }
    player->pulse = pulse;
    pa_sample_spec spec = {.format = PA_SAMPLE_S16LE, .rate = 48000, .channels = 2};
    pa_buffer_attr attributes = {.maxlength = UINT32_MAX, .tlength = buffer_bytes, .prebuf = block_bytes,
                                 .minreq = block_bytes, .fragsize = UINT32_MAX};
    lp.pa_threaded_mainloop_lock(pulse->loop);
    int status = 0;
    player->stream = lp.pa_stream_new(pulse->context, stream_name, &spec, NULL);
    if (!player->stream) status = lp.pa_context_errno(pulse->context);
    if (status == 0) {
        lp.pa_stream_set_state_callback(player->stream, player_signal, player);
        lp.pa_stream_set_write_callback(player->stream, player_request, player);
        lp.pa_stream_set_underflow_callback(player->stream, player_underflow, player);
        if (lp.pa_stream_connect_playback(player->stream, sink, &attributes, PA_STREAM_ADJUST_LATENCY, NULL, NULL) < 0)
            status = lp.pa_context_errno(pulse->context);
    }
    while (status == 0) {
        pa_stream_state_t state = lp.pa_stream_get_state(player->stream);
        if (state == PA_STREAM_READY) break;
        if (!PA_STREAM_IS_GOOD(state)) { status = lp.pa_context_errno(pulse->context); break; }
        lp.pa_threaded_mainloop_wait(pulse->loop);
    }
    lp.pa_threaded_mainloop_unlock(pulse->loop);
    if (status != 0) {
        snprintf(error, error_size, "cannot play to %s: %s", sink ? sink : "the default sink", lp.pa_strerror(status));
        lyre_pulse_player_free(player);
        return NULL;
    }
    return player;
}

LyrePulse *lyre_pulse_player_connection(LyrePulsePlayer *player) { return player->pulse; }

// 0 while the stream plays on, else why not (the loop locked).
static int player_status(LyrePulsePlayer *player) {
    if (!PA_CONTEXT_IS_GOOD(lp.pa_context_get_state(player->pulse->context))) return PA_ERR_CONNECTIONTERMINATED;
    if (lp.pa_stream_get_state(player->stream) != PA_STREAM_READY) return PA_ERR_KILLED;
    return 0;
}

int lyre_pulse_player_wait_writable(LyrePulsePlayer *player, size_t bytes, size_t *writable, uint32_t *underflows) {
    lp.pa_threaded_mainloop_lock(player->pulse->loop);
    int status;
    while ((status = player_status(player)) == 0 && (*writable = lp.pa_stream_writable_size(player->stream)) < bytes)
        lp.pa_threaded_mainloop_wait(player->pulse->loop);
    *underflows = player->underflows;
    lp.pa_threaded_mainloop_unlock(player->pulse->loop);
    return status;
}

int lyre_pulse_player_write(LyrePulsePlayer *player, const void *data, size_t bytes) {
    lp.pa_threaded_mainloop_lock(player->pulse->loop);
    int status = player_status(player);
    if (status == 0 && lp.pa_stream_write(player->stream, data, bytes, NULL, 0, PA_SEEK_RELATIVE) < 0)
        status = lp.pa_context_errno(player->pulse->context);
    lp.pa_threaded_mainloop_unlock(player->pulse->loop);
    return status;
}

// The time on `CLOCK_MONOTONIC` of a time of day (libpulse's timestamps are `gettimeofday`'s), ns.
static int64_t monotonic_ns(const struct timeval *t) {
    struct timespec mono;
    struct timeval now;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    gettimeofday(&now, NULL);
    int64_t ago = ((int64_t)now.tv_sec - t->tv_sec) * 1000000000 + ((int64_t)now.tv_usec - t->tv_usec) * 1000;
    return (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - ago;
}

int lyre_pulse_player_timing(LyrePulsePlayer *player, LyrePulseTimingRequest request, LyrePulseTiming *timing) {
    lp.pa_threaded_mainloop_lock(player->pulse->loop);
    int status = player_status(player);
    // An answer awaited was asked for before what the caller waits for now, perhaps: a new one is asked after it.
    while (status == 0 && request == LYRE_PULSE_TIMING_WAIT && player->timing_pending && (status = player_status(player)) == 0)
        lp.pa_threaded_mainloop_wait(player->pulse->loop);
    if (status == 0 && !player->timing_pending) {
        pa_operation *o = lp.pa_stream_update_timing_info(player->stream, player_timing, player);
        if (o) {
            player->timing_pending = 1;
            lp.pa_operation_unref(o);
        } else {
            status = lp.pa_context_errno(player->pulse->context);
        }
    }
    while (status == 0 && request == LYRE_PULSE_TIMING_WAIT && player->timing_pending && (status = player_status(player)) == 0)
        lp.pa_threaded_mainloop_wait(player->pulse->loop);
    const pa_timing_info *info = status == 0 ? lp.pa_stream_get_timing_info(player->stream) : NULL;
    timing->usable = 0;
    if (info) {
        // The server's time of day when it measured (its clock is ours: the same machine, or libpulse's
        // estimate of the time the answer took otherwise); the frame it was to read next is heard a sink's
        // latency after.
        timing->taken_ns = monotonic_ns(&info->timestamp);
        timing->heard_ns = timing->taken_ns + (int64_t)info->sink_usec * 1000;
        timing->read_index = info->read_index;
        timing->usable = info->playing && !info->read_index_corrupt;
    }
    timing->underflows = player->underflows;
    lp.pa_threaded_mainloop_unlock(player->pulse->loop);
    return status;
}

int lyre_pulse_player_cork(LyrePulsePlayer *player, int cork) {
    Answer a = {.pulse = player->pulse};
    lp.pa_threaded_mainloop_lock(player->pulse->loop);
    int status = player_status(player);
    pa_operation *o = status == 0 ? lp.pa_stream_cork(player->stream, cork, player_success, &a) : NULL;
    if (status == 0) status = wait_for(player->pulse, o, &a);
    lp.pa_threaded_mainloop_unlock(player->pulse->loop);
    return status;
}

uint32_t lyre_pulse_player_sink(LyrePulsePlayer *player) {
    lp.pa_threaded_mainloop_lock(player->pulse->loop);
    uint32_t sink = lp.pa_stream_get_device_index(player->stream);
    lp.pa_threaded_mainloop_unlock(player->pulse->loop);
    return sink;
}

void lyre_pulse_player_free(LyrePulsePlayer *player) {
    if (!player) return;
    if (player->stream) {
        lp.pa_threaded_mainloop_lock(player->pulse->loop);
        lp.pa_stream_set_state_callback(player->stream, NULL, NULL);
        lp.pa_stream_set_write_callback(player->stream, NULL, NULL);
        lp.pa_stream_set_underflow_callback(player->stream, NULL, NULL);
        lp.pa_stream_disconnect(player->stream);
        lp.pa_stream_unref(player->stream);
        lp.pa_threaded_mainloop_unlock(player->pulse->loop);
    }
    lyre_pulse_close(player->pulse);
    free(player);
}

void lyre_pulse_close(LyrePulse *p) {
    if (!p) return;
    if (p->loop) lp.pa_threaded_mainloop_stop(p->loop);
    if (p->context) {
        lp.pa_context_set_state_callback(p->context, NULL, NULL);
        lp.pa_context_set_subscribe_callback(p->context, NULL, NULL);
        lp.pa_context_disconnect(p->context);
        lp.pa_context_unref(p->context);
    }
    if (p->loop) lp.pa_threaded_mainloop_free(p->loop);
    free(p);
}
