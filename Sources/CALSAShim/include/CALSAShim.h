// Why this exists: libasound reports why an open failed ("Unknown PCM nosuchpcm") by printing to stderr
// through snd_lib_error_set_handler's handler, which is variadic, and Swift cannot implement a variadic C
// function. This handler keeps the calling thread's last message instead, so the Swift wrapper can put it
// in its error (once) rather than ALSA printing it on every retry. Names carry the lyre_ prefix.
#ifndef LYRE_CALSA_SHIM_H
#define LYRE_CALSA_SHIM_H

/// Routes libasound's error messages to lyre_alsa_last_error() instead of stderr (process-wide).
void lyre_alsa_capture_errors(void);

/// The last message libasound reported on this thread since lyre_alsa_clear_error(), or "".
const char *lyre_alsa_last_error(void);

void lyre_alsa_clear_error(void);
#endif
