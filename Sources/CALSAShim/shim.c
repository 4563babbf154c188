#include "CALSAShim.h"
#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

static __thread char last_error[512];

static void keep_error(const char *file, int line, const char *function, int err, const char *format, ...) {
    (void)file; (void)line; (void)function; (void)err;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(last_error, sizeof last_error, format, arguments);
    va_end(arguments);
}

void lyre_alsa_capture_errors(void) { snd_lib_error_set_handler(keep_error); }

const char *lyre_alsa_last_error(void) { return last_error; }

void lyre_alsa_clear_error(void) { last_error[0] = 0; }
