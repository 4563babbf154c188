#ifndef LYRE_FFMPEG_SHIM_H
#define LYRE_FFMPEG_SHIM_H

// Audio decoding through FFmpeg's libraries, opened with dlopen on first use: every container and codec they read (WAV, FLAC, Ogg Vorbis and
// Opus, MP3, MP4/M4A with AAC or ALAC, ...), as interleaved float at the source's own rate and channel count.
// A WAV of samples (integer or float, no ID3 chunk) and raw PCM are read by libsndfile instead, opened likewise,
// so that playing them loads no FFmpeg library (see shim.c).
// The demux/decode/convert loop is FFmpeg's own send/receive pattern, kept in C beside the headers it uses
// (AVERROR_EOF and friends are macros Swift cannot import); the Swift side is LyreAudio's AudioFileReader.

#include <stddef.h>
#include <stdint.h>

typedef struct LyreDecoder LyreDecoder;

/// Opens a file and its best audio stream. NULL on failure, with a message in `error`.
LyreDecoder *lyre_decoder_open_file(const char *path, char *error, size_t error_size);

/// Reads headerless PCM from `fd` (not closed) in `format` ("s16le", "f32le", ..., FFmpeg's raw demuxers' names).
LyreDecoder *lyre_decoder_open_raw(int fd, const char *format, int sample_rate, int channels, char *error,
                                   size_t error_size);

/// "libsndfile" or "FFmpeg": which library reads the source.
const char *lyre_decoder_library(const LyreDecoder *decoder);

int lyre_decoder_sample_rate(const LyreDecoder *decoder);
int lyre_decoder_channels(const LyreDecoder *decoder);
/// Frames in the source, from the container's duration; -1 when it cannot tell.
int64_t lyre_decoder_frames(const LyreDecoder *decoder);

/// Tag `index` of the container's tags (`which` 0) or the audio stream's (1; Ogg keeps them there): 1 with
/// its key and value, 0 past the last.
int lyre_decoder_tag(const LyreDecoder *decoder, int which, int index, const char **key, const char **value);

/// An embedded picture (FLAC PICTURE, ID3 APIC, MP4 covr: a stream with AV_DISPOSITION_ATTACHED_PIC), the
/// front cover when one says so. 0 when there is none; the bytes live as long as the decoder.
int lyre_decoder_picture(const LyreDecoder *decoder, const uint8_t **data, int *size);

/// Decodes up to `frames` interleaved frames into `out`. Returns the frames written, 0 at the end.
/// Packets the decoder rejects are skipped; a source that yields nothing but errors ends.
long lyre_decoder_read(LyreDecoder *decoder, float *out, long frames);

/// Moves to `frame`, sample-accurately (the decoder starts at the keyframe before and drops up to it).
/// 0 on success, negative when the source cannot seek.
int lyre_decoder_seek(LyreDecoder *decoder, int64_t frame);

void lyre_decoder_close(LyreDecoder *decoder);

#endif
