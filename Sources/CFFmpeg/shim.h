// FFmpeg's libraries (Debian libavformat-dev, libavcodec-dev, libswresample-dev, libavutil-dev).
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>
#include <libavutil/dict.h>
