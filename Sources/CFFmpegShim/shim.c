#include "CFFmpegShim.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <sndfile.h>

// FFmpeg's libraries are opened when the first file is, not linked: linked, they cost every process that
// links LyreAudio (lyred, every lyre command) 40 ms of start-up and 27 MB of memory, for their own
// dependencies' initialisers. The versions are the ones the headers were built with.
#define LYRE_FFMPEG_FUNCTIONS(X) \
    X(av_channel_layout_compare) \
    X(av_channel_layout_copy) \
    X(av_channel_layout_default) \
    X(av_channel_layout_describe) \
    X(av_channel_layout_uninit) \
    X(av_dict_free) \
    X(av_dict_get) \
    X(av_dict_set) \
    X(av_dict_set_int) \
    X(av_find_best_stream) \
    X(av_find_input_format) \
    X(av_frame_alloc) \
    X(av_frame_free) \
    X(av_frame_unref) \
    X(av_free) \
    X(av_freep) \
    X(av_log_set_level) \
    X(av_malloc) \
    X(av_mallocz) \
    X(av_packet_alloc) \
    X(av_packet_free) \
    X(av_packet_unref) \
    X(av_read_frame) \
    X(av_realloc_array) \
    X(av_rescale_q) \
    X(av_seek_frame) \
    X(av_strerror) \
    X(avcodec_alloc_context3) \
    X(avcodec_flush_buffers) \
    X(avcodec_free_context) \
    X(avcodec_open2) \
    X(avcodec_parameters_to_context) \
    X(avcodec_receive_frame) \
    X(avcodec_send_packet) \
    X(avformat_alloc_context) \
    X(avformat_close_input) \
    X(avformat_find_stream_info) \
    X(avformat_open_input) \
    X(avio_alloc_context) \
    X(avio_context_free) \
    X(swr_alloc_set_opts2) \
    X(swr_convert) \
    X(swr_free) \
    X(swr_init)

#define LYRE_FIELD(name) __typeof__(name) *name;
static struct { LYRE_FFMPEG_FUNCTIONS(LYRE_FIELD) } ff;

static pthread_once_t ff_once = PTHREAD_ONCE_INIT;
static char ff_error[256];

#define LYRE_SONAME(lib, major) "lib" #lib ".so." AV_STRINGIFY(major)

static void ff_load(void) {
    const char *sonames[] = {
        LYRE_SONAME(avutil, LIBAVUTIL_VERSION_MAJOR), LYRE_SONAME(swresample, LIBSWRESAMPLE_VERSION_MAJOR),
        LYRE_SONAME(avcodec, LIBAVCODEC_VERSION_MAJOR), LYRE_SONAME(avformat, LIBAVFORMAT_VERSION_MAJOR),
    };
    void *handles[4];
    for (int i = 0; i < 4; i++) {
        handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            snprintf(ff_error, sizeof ff_error, "FFmpeg's %s is missing (install FFmpeg's libraries: Tools/demo does)", sonames[i]);
            return;
        }
    }
#define LYRE_RESOLVE(name) \
    for (int i = 0; i < 4 && !ff.name; i++) ff.name = (__typeof__(name) *)dlsym(handles[i], #name); \
    if (!ff.name) { snprintf(ff_error, sizeof ff_error, "FFmpeg's libraries lack %s", #name); return; }
    LYRE_FFMPEG_FUNCTIONS(LYRE_RESOLVE)
    // Quiet: a file FFmpeg cannot read is reported once, as our own one-line error with FFmpeg's reason
    // (av_strerror); its log lines on stderr ("[mp3 @ 0x…] Failed to read frame size") came on top of it.
    ff.av_log_set_level(AV_LOG_QUIET);
}

// 0 when FFmpeg's libraries are loaded, else -1 with the reason in `error`.
static int ff_ready(char *error, size_t error_size) {
    pthread_once(&ff_once, ff_load);
    if (!ff_error[0]) return 0;
    snprintf(error, error_size, "%s", ff_error);
    return -1;
}

// WAV files of plain PCM or float samples, and raw PCM, are read by libsndfile instead, opened the same way:
// FFmpeg's libraries and what they load cost `lyre play` 25 MB of memory (65.7 MB against 40.3 MB, a WAV
// played, VmRSS of the release build here), and a file of samples needs no codec. lyred, which reads no files,
// never loads it. Both give the same floats: a 16-bit sample is
// x / 32768 in each (AudioFileReaderTests reads the same file both ways).
#define LYRE_SNDFILE_FUNCTIONS(X) \
    X(sf_close) \
    X(sf_get_string) \
    X(sf_open) \
    X(sf_open_fd) \
    X(sf_readf_float) \
    X(sf_seek) \
    X(sf_strerror)

static struct { LYRE_SNDFILE_FUNCTIONS(LYRE_FIELD) } sf;
static pthread_once_t sf_once = PTHREAD_ONCE_INIT;
static int sf_loaded;

static void sf_load(void) {
    void *handle = dlopen("libsndfile.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) return;
#define LYRE_SF_RESOLVE(name) \
    if (!(sf.name = (__typeof__(name) *)dlsym(handle, #name))) return;
    LYRE_SNDFILE_FUNCTIONS(LYRE_SF_RESOLVE)
    sf_loaded = 1;
}

// 1 when libsndfile is there; without it every source goes to FFmpeg.
static int sf_ready(void) {
    pthread_once(&sf_once, sf_load);
    return sf_loaded;
}

// A source that gives nothing but undecodable packets ends after this many in a row.
enum { MAX_CONSECUTIVE_ERRORS = 64 };

struct LyreDecoder {
    SNDFILE *snd;              // read by libsndfile (the rest is FFmpeg's and unused)
    int snd_seekable;
    char snd_track[64];        // a WAV's INFO IPRT, "" when none
    AVFormatContext *format;
    AVCodecContext *codec;
    SwrContext *swr;
    AVPacket *packet;
    AVFrame *frame;
    int stream;
    int channels;
    int sample_rate;
    int swr_format;            // the input sample format swr was set up for (-1 before the first frame)
    AVChannelLayout swr_layout; // and its layout
    AVIOContext *io;           // raw PCM from a descriptor: our own reader
    int fd;
    int flushing;              // the decoder was sent its end (a NULL packet)
    int ended;                 // and has given its last frame
    int64_t skip_until;        // after a seek: drop frames before this one (-1: none)
    int64_t position;          // the frame the next one taken is
    int64_t total;             // frames the container says the stream has, when it says so exactly (-1: not)
    float *pending;            // decoded, converted, not yet read
    long pending_frames;
    long pending_offset;
    long pending_capacity;
};

static void describe(int code, const char *what, char *error, size_t size) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {0};
    ff.av_strerror(code, text, sizeof text);
    snprintf(error, size, "%s: %s", what, text);
}

// Finds the best audio stream and opens its decoder.
static LyreDecoder *finish_open(LyreDecoder *d, const char *what, char *error, size_t error_size) {
    const AVCodec *codec = NULL;
    int stream = ff.av_find_best_stream(d->format, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (stream < 0 || codec == NULL) {
        snprintf(error, error_size, "%s: no audio stream FFmpeg can decode", what);
        lyre_decoder_close(d);
        return NULL;
    }
    d->stream = stream;
    AVStream *s = d->format->streams[stream];
    d->codec = ff.avcodec_alloc_context3(codec);
    int status = d->codec ? ff.avcodec_parameters_to_context(d->codec, s->codecpar) : AVERROR(ENOMEM);
    if (status >= 0) status = ff.avcodec_open2(d->codec, codec, NULL);
    if (status < 0) {
        describe(status, what, error, error_size);
        lyre_decoder_close(d);
        return NULL;
    }
    d->sample_rate = d->codec->sample_rate;
    d->channels = d->codec->ch_layout.nb_channels;
    if (d->sample_rate <= 0 || d->channels <= 0) {
        snprintf(error, error_size, "%s: the audio stream has no sample rate or channel count", what);
        lyre_decoder_close(d);
        return NULL;
    }
    // A codec's last packet decodes whole (an AAC frame is 1024 samples) where the container keeps only part
    // of it (an MP4 edit list). Keep to the container's length, unless it was only guessed from the bitrate.
    d->total = d->format->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE ? -1 : lyre_decoder_frames(d);
    d->packet = ff.av_packet_alloc();
    d->frame = ff.av_frame_alloc();
    if (!d->packet || !d->frame) {
        snprintf(error, error_size, "%s: out of memory", what);
        lyre_decoder_close(d);
        return NULL;
    }
    return d;
}

static LyreDecoder *new_decoder(void) {
    LyreDecoder *d = ff.av_mallocz(sizeof *d);
    if (d) {
        d->stream = -1;
        d->swr_format = -1;
        d->skip_until = -1;
        d->total = -1;
        d->fd = -1;
    }
    return d;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// Walks a RIFF WAVE file's top-level chunks from its header on: whether it holds an ID3 chunk, and its LIST
// INFO `IPRT` (where FFmpeg writes the track number; libsndfile reads only `ITRK`), into `track`. An RF64
// file's sizes live in its ds64 chunk, so the walk stops at the first chunk that says so (0xFFFFFFFF).
static int wav_scan(FILE *file, char *track, size_t track_size) {
    unsigned char header[8];
    track[0] = 0;
    if (fseeko(file, 12, SEEK_SET) != 0) return 0;
    while (fread(header, 1, sizeof header, file) == sizeof header) {
        if (memcmp(header, "id3 ", 4) == 0 || memcmp(header, "ID3 ", 4) == 0) return 1;
        uint32_t size = le32(header + 4);
        if (size == 0xFFFFFFFFu) return 0;
        off_t next = ftello(file) + (off_t)size + (size & 1);
        unsigned char kind[4];
        if (memcmp(header, "LIST", 4) == 0 && size >= 4 && fread(kind, 1, 4, file) == 4 && memcmp(kind, "INFO", 4) == 0) {
            for (uint32_t at = 4; at + 8 <= size && fread(header, 1, sizeof header, file) == sizeof header;) {
                uint32_t length = le32(header + 4);
                if (length > size - at - 8) break;
                if (memcmp(header, "IPRT", 4) == 0 && length < track_size) {
                    if (fread(track, 1, length, file) != length) break;
                    track[length] = 0;
                } else if (fseeko(file, (off_t)length, SEEK_CUR) != 0) break;
                if ((length & 1) && fseeko(file, 1, SEEK_CUR) != 0) break;
                at += 8 + length + (length & 1);
            }
        }
        if (fseeko(file, next, SEEK_SET) != 0) return 0;
    }
    return 0;
}

// A WAV (RIFF, RF64 or BW64) of integer or float samples, by libsndfile; NULL for anything else, and for a
// WAV with an ID3 chunk, whose tags and picture FFmpeg reads (libsndfile skips it).
static LyreDecoder *open_wav(const char *path) {
    unsigned char head[12];
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    size_t got = fread(head, 1, sizeof head, file);
    char track[sizeof ((LyreDecoder *)0)->snd_track];
    int wav = got == sizeof head && memcmp(head + 8, "WAVE", 4) == 0
        && (memcmp(head, "RIFF", 4) == 0 || memcmp(head, "RF64", 4) == 0 || memcmp(head, "BW64", 4) == 0);
    wav = wav && !wav_scan(file, track, sizeof track);
    fclose(file);
    if (!wav || !sf_ready()) return NULL;
    SF_INFO info = {0};
    SNDFILE *snd = sf.sf_open(path, SFM_READ, &info);
    if (!snd) return NULL;
    int type = info.format & SF_FORMAT_TYPEMASK, subtype = info.format & SF_FORMAT_SUBMASK;
    int samples = subtype == SF_FORMAT_PCM_U8 || subtype == SF_FORMAT_PCM_16 || subtype == SF_FORMAT_PCM_24
        || subtype == SF_FORMAT_PCM_32 || subtype == SF_FORMAT_FLOAT || subtype == SF_FORMAT_DOUBLE;
    if ((type != SF_FORMAT_WAV && type != SF_FORMAT_WAVEX && type != SF_FORMAT_RF64) || !samples
        || info.samplerate <= 0 || info.channels <= 0) {
        sf.sf_close(snd);
        return NULL;
    }
    LyreDecoder *d = calloc(1, sizeof *d);
    if (!d) { sf.sf_close(snd); return NULL; }
    d->snd = snd;
    memcpy(d->snd_track, track, sizeof track);
    d->snd_seekable = info.seekable;
    d->sample_rate = info.samplerate;
    d->channels = info.channels;
    d->total = info.frames;
    return d;
}

LyreDecoder *lyre_decoder_open_file(const char *path, char *error, size_t error_size) {
    LyreDecoder *wav = open_wav(path);
    if (wav) return wav;
    if (ff_ready(error, error_size) != 0) return NULL;
    LyreDecoder *d = new_decoder();
    if (!d) { snprintf(error, error_size, "out of memory"); return NULL; }
    char what[512];
    snprintf(what, sizeof what, "cannot read %s as audio", path);
    int status = ff.avformat_open_input(&d->format, path, NULL, NULL);
    // Most containers say the audio's rate and channels in their header (WAV, FLAC, MP4, Ogg, MP3's first
    // frame); only the others are probed by decoding, which costs tens of ms before the first sample.
    int known = 0;
    for (unsigned i = 0; status >= 0 && i < d->format->nb_streams; i++) {
        const AVCodecParameters *p = d->format->streams[i]->codecpar;
        if (p->codec_type == AVMEDIA_TYPE_AUDIO && p->codec_id != AV_CODEC_ID_NONE && p->sample_rate > 0 && p->ch_layout.nb_channels > 0)
            known = 1;
    }
    if (status >= 0 && !known) status = ff.avformat_find_stream_info(d->format, NULL);
    if (status < 0) {
        describe(status, what, error, error_size);
        lyre_decoder_close(d);
        return NULL;
    }
    return finish_open(d, what, error, error_size);
}

static int read_descriptor(void *opaque, uint8_t *buffer, int size) {
    LyreDecoder *d = opaque;
    for (;;) {
        ssize_t got = read(d->fd, buffer, (size_t)size);
        if (got > 0) return (int)got;
        if (got == 0) return AVERROR_EOF;
        if (errno != EINTR) return AVERROR(errno);
    }
}

LyreDecoder *lyre_decoder_open_raw(int fd, const char *format, int sample_rate, int channels, char *error,
                                   size_t error_size) {
    static const struct { const char *name; int format; } raw[] = {
        {"s16le", SF_FORMAT_PCM_16 | SF_ENDIAN_LITTLE}, {"s16be", SF_FORMAT_PCM_16 | SF_ENDIAN_BIG},
        {"s24le", SF_FORMAT_PCM_24 | SF_ENDIAN_LITTLE}, {"s32le", SF_FORMAT_PCM_32 | SF_ENDIAN_LITTLE},
        {"f32le", SF_FORMAT_FLOAT | SF_ENDIAN_LITTLE}, {"u8", SF_FORMAT_PCM_U8},
    };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0] && sf_ready(); i++) {
        if (strcmp(format, raw[i].name) != 0) continue;
        SF_INFO info = {.samplerate = sample_rate, .channels = channels, .format = SF_FORMAT_RAW | raw[i].format};
        SNDFILE *snd = sf.sf_open_fd(fd, SFM_READ, &info, 0);
        if (!snd) {
            snprintf(error, error_size, "cannot read raw PCM: %s", sf.sf_strerror(NULL));
            return NULL;
        }
        LyreDecoder *d = calloc(1, sizeof *d);
        if (!d) { sf.sf_close(snd); snprintf(error, error_size, "out of memory"); return NULL; }
        d->snd = snd;
        d->sample_rate = sample_rate;
        d->channels = channels;
        d->total = -1;
        d->fd = fd;
        return d;
    }
    if (ff_ready(error, error_size) != 0) return NULL;
    const char *what = "cannot read raw PCM";
    const AVInputFormat *input = ff.av_find_input_format(format);
    LyreDecoder *d = new_decoder();
    if (!d) { snprintf(error, error_size, "out of memory"); return NULL; }
    if (!input) {
        snprintf(error, error_size, "%s: FFmpeg has no '%s' demuxer", what, format);
        lyre_decoder_close(d);
        return NULL;
    }
    d->fd = fd;
    enum { IO_BUFFER = 32768 };
    uint8_t *buffer = ff.av_malloc(IO_BUFFER);
    d->io = buffer ? ff.avio_alloc_context(buffer, IO_BUFFER, 0, d, read_descriptor, NULL, NULL) : NULL;
    d->format = ff.avformat_alloc_context();
    if (!d->io || !d->format) {
        if (!d->io) ff.av_free(buffer);
        snprintf(error, error_size, "%s: out of memory", what);
        lyre_decoder_close(d);
        return NULL;
    }
    d->format->pb = d->io;
    d->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    AVChannelLayout layout;
    ff.av_channel_layout_default(&layout, channels);
    char layout_text[64] = {0};
    ff.av_channel_layout_describe(&layout, layout_text, sizeof layout_text);
    AVDictionary *options = NULL;
    ff.av_dict_set_int(&options, "sample_rate", sample_rate, 0);
    ff.av_dict_set(&options, "ch_layout", layout_text, 0);
    // The raw demuxer knows everything from these options; avformat_find_stream_info would only wait for
    // audio on the pipe.
    int status = ff.avformat_open_input(&d->format, NULL, input, &options);
    ff.av_dict_free(&options);
    if (status < 0) {
        describe(status, what, error, error_size);
        lyre_decoder_close(d);
        return NULL;
    }
    return finish_open(d, what, error, error_size);
}

const char *lyre_decoder_library(const LyreDecoder *d) { return d->snd ? "libsndfile" : "FFmpeg"; }

int lyre_decoder_sample_rate(const LyreDecoder *d) { return d->sample_rate; }
int lyre_decoder_channels(const LyreDecoder *d) { return d->channels; }

int64_t lyre_decoder_frames(const LyreDecoder *d) {
    if (d->snd) return d->snd_seekable ? d->total : -1;
    if (d->io) return -1;
    AVStream *s = d->format->streams[d->stream];
    if (s->duration > 0 && s->duration != AV_NOPTS_VALUE)
        return ff.av_rescale_q(s->duration, s->time_base, (AVRational){1, d->sample_rate});
    if (d->format->duration > 0 && d->format->duration != AV_NOPTS_VALUE)
        return ff.av_rescale_q(d->format->duration, AV_TIME_BASE_Q, (AVRational){1, d->sample_rate});
    return -1;
}

int lyre_decoder_tag(const LyreDecoder *d, int which, int index, const char **key, const char **value) {
    if (d->snd) {
        // A WAV's LIST INFO chunk, under FFmpeg's names for it.
        static const struct { int id; const char *name; } names[] = {
            {SF_STR_TITLE, "title"}, {SF_STR_ARTIST, "artist"}, {SF_STR_ALBUM, "album"}, {SF_STR_GENRE, "genre"},
            {SF_STR_TRACKNUMBER, "track"}, {SF_STR_DATE, "date"}, {SF_STR_COMMENT, "comment"},
        };
        if (which != 0) return 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            const char *text = sf.sf_get_string(d->snd, names[i].id);
            if ((!text || !*text) && names[i].id == SF_STR_TRACKNUMBER) text = d->snd_track;
            if (!text || !*text || index-- > 0) continue;
            *key = names[i].name;
            *value = text;
            return 1;
        }
        return 0;
    }
    const AVDictionary *tags = which == 0 ? d->format->metadata : d->format->streams[d->stream]->metadata;
    const AVDictionaryEntry *entry = NULL;
    for (int i = 0; i <= index; i++) {
        entry = ff.av_dict_get(tags, "", entry, AV_DICT_IGNORE_SUFFIX);
        if (!entry) return 0;
    }
    *key = entry->key;
    *value = entry->value;
    return 1;
}

int lyre_decoder_picture(const LyreDecoder *d, const uint8_t **data, int *size) {
    if (d->snd) return 0;
    const AVPacket *chosen = NULL;
    for (unsigned i = 0; i < d->format->nb_streams; i++) {
        const AVStream *s = d->format->streams[i];
        if (!(s->disposition & AV_DISPOSITION_ATTACHED_PIC) || s->attached_pic.size <= 0) continue;
        const AVDictionaryEntry *comment = ff.av_dict_get(s->metadata, "comment", NULL, 0);
        int front = comment && strcmp(comment->value, "Cover (front)") == 0;
        if (!chosen || front) chosen = &s->attached_pic;
        if (front) break;
    }
    if (!chosen) return 0;
    *data = chosen->data;
    *size = chosen->size;
    return 1;
}

// Sets the converter up for the frame's sample format and layout: interleaved float, same rate and
// channel count as the stream was opened with.
static int prepare_converter(LyreDecoder *d, const AVFrame *frame) {
    if (d->swr && frame->format == d->swr_format && ff.av_channel_layout_compare(&frame->ch_layout, &d->swr_layout) == 0)
        return 0;
    ff.swr_free(&d->swr);
    ff.av_channel_layout_uninit(&d->swr_layout);
    AVChannelLayout in;
    if (frame->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || frame->ch_layout.nb_channels <= 0)
        ff.av_channel_layout_default(&in, frame->ch_layout.nb_channels > 0 ? frame->ch_layout.nb_channels : d->channels);
    else if (ff.av_channel_layout_copy(&in, &frame->ch_layout) < 0)
        return AVERROR(ENOMEM);
    AVChannelLayout out;
    if (in.nb_channels == d->channels) ff.av_channel_layout_copy(&out, &in);
    else ff.av_channel_layout_default(&out, d->channels);
    int status = ff.swr_alloc_set_opts2(&d->swr, &out, AV_SAMPLE_FMT_FLT, frame->sample_rate, &in, frame->format,
                                     frame->sample_rate, 0, NULL);
    if (status >= 0) status = ff.swr_init(d->swr);
    ff.av_channel_layout_uninit(&out);
    if (status < 0) {
        ff.av_channel_layout_uninit(&in);
        ff.swr_free(&d->swr);
        return status;
    }
    d->swr_format = frame->format;
    d->swr_layout = in;
    return 0;
}

// Converts the decoded frame and appends it to `pending`, dropping what lies before a seek's target.
static int take_frame(LyreDecoder *d, AVFrame *frame) {
    if (frame->sample_rate != d->sample_rate) {
        // A stream whose rate changes midway: what follows would play at the wrong speed.
        return 0;
    }
    int status = prepare_converter(d, frame);
    if (status < 0) return status;
    long count = frame->nb_samples;
    long needed = d->pending_frames + count;
    if (needed > d->pending_capacity) {
        float *grown = ff.av_realloc_array(d->pending, (size_t)needed, sizeof(float) * (size_t)d->channels);
        if (!grown) return AVERROR(ENOMEM);
        d->pending = grown;
        d->pending_capacity = needed;
    }
    uint8_t *out = (uint8_t *)(d->pending + d->pending_frames * d->channels);
    int converted = ff.swr_convert(d->swr, &out, (int)count, (const uint8_t **)frame->extended_data, frame->nb_samples);
    if (converted < 0) return converted;
    long keep_from = 0;
    if (d->skip_until >= 0) {
        AVStream *s = d->format->streams[d->stream];
        int64_t ts = frame->best_effort_timestamp;
        if (ts != AV_NOPTS_VALUE) {
            if (s->start_time != AV_NOPTS_VALUE) ts -= s->start_time;
            int64_t start = ff.av_rescale_q(ts, s->time_base, (AVRational){1, d->sample_rate});
            if (start + converted <= d->skip_until) keep_from = converted;
            else if (start < d->skip_until) keep_from = (long)(d->skip_until - start);
        }
        if (keep_from < converted) d->skip_until = -1;
    }
    long kept = converted - keep_from;
    if (d->total >= 0 && d->position + kept > d->total) kept = d->total > d->position ? (long)(d->total - d->position) : 0;
    if (keep_from > 0 && kept > 0)
        memmove(out, out + keep_from * d->channels * sizeof(float), (size_t)kept * d->channels * sizeof(float));
    d->pending_frames += kept;
    d->position += kept;
    return 0;
}

// Decodes until something is pending or the source has ended.
static void decode_more(LyreDecoder *d) {
    int consecutive = 0;
    while (d->pending_frames - d->pending_offset == 0 && !d->ended) {
        int status = ff.avcodec_receive_frame(d->codec, d->frame);
        if (status == 0) {
            status = take_frame(d, d->frame);
            ff.av_frame_unref(d->frame);
            if (status < 0) d->ended = 1;
            consecutive = 0;
            continue;
        }
        if (status == AVERROR_EOF) { d->ended = 1; break; }
        if (status != AVERROR(EAGAIN)) {
            if (++consecutive >= MAX_CONSECUTIVE_ERRORS) d->ended = 1;
            continue;
        }
        if (d->flushing) { d->ended = 1; break; }
        status = ff.av_read_frame(d->format, d->packet);
        if (status < 0) {
            // The end of the input, or an error reading it: let the decoder give what it holds.
            ff.avcodec_send_packet(d->codec, NULL);
            d->flushing = 1;
            continue;
        }
        if (d->packet->stream_index == d->stream) {
            status = ff.avcodec_send_packet(d->codec, d->packet);
            if (status < 0 && status != AVERROR(EAGAIN) && ++consecutive >= MAX_CONSECUTIVE_ERRORS) d->ended = 1;
        }
        ff.av_packet_unref(d->packet);
    }
}

long lyre_decoder_read(LyreDecoder *d, float *out, long frames) {
    if (d->snd) {
        sf_count_t got = sf.sf_readf_float(d->snd, out, frames);
        return got > 0 ? (long)got : 0;
    }
    long written = 0;
    while (written < frames) {
        if (d->pending_frames - d->pending_offset == 0) {
            d->pending_frames = d->pending_offset = 0;
            decode_more(d);
            if (d->pending_frames == 0) break;
        }
        long available = d->pending_frames - d->pending_offset;
        long take = available < frames - written ? available : frames - written;
        memcpy(out + written * d->channels, d->pending + d->pending_offset * d->channels,
               (size_t)take * d->channels * sizeof(float));
        d->pending_offset += take;
        written += take;
    }
    return written;
}

int lyre_decoder_seek(LyreDecoder *d, int64_t frame) {
    if (d->snd) return d->snd_seekable && frame >= 0 && sf.sf_seek(d->snd, frame, SEEK_SET) == frame ? 0 : -1;
    if (d->io || frame < 0) return -1;
    AVStream *s = d->format->streams[d->stream];
    int64_t ts = ff.av_rescale_q(frame, (AVRational){1, d->sample_rate}, s->time_base);
    if (s->start_time != AV_NOPTS_VALUE) ts += s->start_time;
    int status = ff.av_seek_frame(d->format, d->stream, ts, AVSEEK_FLAG_BACKWARD);
    if (status < 0) return status;
    ff.avcodec_flush_buffers(d->codec);
    d->pending_frames = d->pending_offset = 0;
    d->flushing = d->ended = 0;
    d->skip_until = frame;
    d->position = frame;
    return 0;
}

void lyre_decoder_close(LyreDecoder *d) {
    if (!d) return;
    if (d->snd) {
        sf.sf_close(d->snd);
        free(d);
        return;
    }
    ff.av_frame_free(&d->frame);
    ff.av_packet_free(&d->packet);
    ff.avcodec_free_context(&d->codec);
    ff.swr_free(&d->swr);
    ff.av_channel_layout_uninit(&d->swr_layout);
    ff.avformat_close_input(&d->format);
    if (d->io) {
        ff.av_freep(&d->io->buffer);
        ff.avio_context_free(&d->io);
    }
    ff.av_free(d->pending);
    ff.av_free(d);
}
