#ifndef LYRE_PULSE_SHIM_H
#define LYRE_PULSE_SHIM_H

// A control connection to the sound server (PulseAudio, or PipeWire through pipewire-pulse) for `lyre sink`:
// loading and unloading its outputs (null sinks), moving streams, and a callback for every playback stream
// (sink input) that appears, changes or ends. libpulse's asynchronous API runs on its threaded main loop
// (libpulse's own thread); the calls here wait on that loop's signal for their answer, so they must not be
// made from a callback. Kept in C because libpulse is callbacks all the way down; the decisions are
// LyreSink's SinkRouter, in Swift. libpulse itself is opened on first use, not linked (see shim.c): a
// machine without it fails here with a message saying so.

#include <stddef.h>
#include <stdint.h>

typedef struct LyrePulse LyrePulse;

/// A stream: `sink` is the index of the sink it plays to, or UINT32_MAX when it has ended. `role` is its
/// media.role, `app` its application.name, `pid` its application.process.id (0 when not said). An `index`
/// of UINT32_MAX says the connection to the server is gone.
typedef void (*LyrePulseInputCallback)(void *user, uint32_t index, uint32_t sink, const char *role, const char *app,
                                       uint32_t pid);

/// A sink's volume changed (or was first seen): the average of its channels in dB (-inf for silence), and
/// whether it is muted.
typedef void (*LyrePulseSinkCallback)(void *user, uint32_t sink, double volume_db, int muted);

/// Opens libpulse, once (every call below does it first): 0, else -1 with why in `error`.
int lyre_pulse_open_library(char *error, size_t error_size);

/// Connects (PULSE_SERVER and the client configuration as every client does) and reports every stream that
/// exists now and from then on, and every change of a sink. NULL on failure, with a message in `error`.
LyrePulse *lyre_pulse_connect(const char *client_name, LyrePulseInputCallback callback, LyrePulseSinkCallback sink_callback,
                              void *user, char *error, size_t error_size);

/// The server's name: "pulseaudio", or "PulseAudio (on PipeWire 1.2.7)" from pipewire-pulse.
int lyre_pulse_server_name(LyrePulse *pulse, char *name, size_t size);
/// Sets every channel of sink `sink` to `volume_db`.
int lyre_pulse_set_sink_volume(LyrePulse *pulse, uint32_t sink, double volume_db);

/// Loads `module` with `arguments`; its index in `*module_index`. 0 on success, else a PA_ERR_* code.
int lyre_pulse_load_module(LyrePulse *pulse, const char *module, const char *arguments, uint32_t *module_index);
int lyre_pulse_unload_module(LyrePulse *pulse, uint32_t module_index);
/// The index of the sink called `name`.
int lyre_pulse_sink_index(LyrePulse *pulse, const char *name, uint32_t *index);
/// The default sink's name, or else the first sink whose name does not start with `avoid_prefix`.
int lyre_pulse_local_sink(LyrePulse *pulse, const char *avoid_prefix, char *name, size_t size);
int lyre_pulse_move_input(LyrePulse *pulse, uint32_t input, const char *sink_name);
/// What a PA_ERR_* code means (or why libpulse could not be opened).
const char *lyre_pulse_strerror(int code);
void lyre_pulse_close(LyrePulse *pulse);

/// A recording stream (libpulse's simple API): float, 48 kHz, stereo, interleaved.
typedef struct LyrePulseRecorder LyrePulseRecorder;

/// Records `source` (a sink's monitor) in fragments of `fragment_bytes`. NULL on failure, with a message in
/// `error` (libpulse's reason, or the library missing).
LyrePulseRecorder *lyre_pulse_record(const char *client_name, const char *stream_name, const char *source,
                                     uint32_t fragment_bytes, char *error, size_t error_size);
/// Blocks until `bytes` were recorded into `data`. 0, else a PA_ERR_* code (the stream or server gone).
int lyre_pulse_record_read(LyrePulseRecorder *recorder, void *data, size_t bytes);
void lyre_pulse_record_free(LyrePulseRecorder *recorder);

/// A playback stream to a sink, for lyred's output: S16_LE, 48 kHz, stereo, interleaved, on a connection of
/// its own. The server holds `buffer_bytes` of it at most and starts (or, after running dry, starts again)
/// once it has `block_bytes`. Its timing is the server's own (`pa_timing_info`), not libpulse's estimate
/// interpolated from it: the latter, on a stream that sat idle, left out the first 20 ms written for 2 to
/// 3 s (README, "Through a sound server").
typedef struct LyrePulsePlayer LyrePulsePlayer;

/// When the server last said where the stream was: the frame at `read_index` (bytes since the stream was
/// made) is heard at `heard_ns` (`CLOCK_MONOTONIC`), as of `taken_ns`. `usable` is 0 while the stream is not
/// playing (not started, corked, run dry). `underflows`: how many times the stream ran dry since it was made.
typedef struct {
    int64_t heard_ns;
    int64_t taken_ns;
    int64_t read_index;
    int usable;
    uint32_t underflows;
} LyrePulseTiming;

/// Connects and makes the stream on `sink` (NULL: the server's default). NULL on failure, with why in `error`.
LyrePulsePlayer *lyre_pulse_player_new(const char *client_name, const char *stream_name, const char *sink, uint32_t buffer_bytes,
                                       uint32_t block_bytes, char *error, size_t error_size);
/// Blocks until `bytes` can be written; how many can, in `writable`. 0, else a PA_ERR_* code; `underflows` as in
/// `LyrePulseTiming`.
int lyre_pulse_player_wait_writable(LyrePulsePlayer *player, size_t bytes, size_t *writable, uint32_t *underflows);
int lyre_pulse_player_write(LyrePulsePlayer *player, const void *data, size_t bytes);
typedef enum {
    /// What it said last, and it is asked again (unless an answer is awaited).
    LYRE_PULSE_TIMING_ASK,
    /// It is asked, and its answer waited for.
    LYRE_PULSE_TIMING_WAIT,
} LyrePulseTimingRequest;

/// The stream's timing (`LyrePulseTiming`) as `request` says. 0, else a PA_ERR_* code.
int lyre_pulse_player_timing(LyrePulsePlayer *player, LyrePulseTimingRequest request, LyrePulseTiming *timing);
/// Pauses (1) or resumes (0) the stream, and waits for the server to say it did.
int lyre_pulse_player_cork(LyrePulsePlayer *player, int cork);
/// The index of the sink the stream plays to (for its volume: `lyre_pulse_set_sink_volume`).
uint32_t lyre_pulse_player_sink(LyrePulsePlayer *player);
LyrePulse *lyre_pulse_player_connection(LyrePulsePlayer *player);
void lyre_pulse_player_free(LyrePulsePlayer *player);

#endif
