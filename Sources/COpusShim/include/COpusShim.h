// Why this exists: opus_encoder_ctl and opus_decoder_ctl are variadic and their requests are macros
// (OPUS_SET_BITRATE(x) expands to a request id plus a type-checked argument), and Swift can call neither.
// These fixed-signature wrappers forward to them; names carry the lyre_ prefix.
#ifndef LYRE_COPUS_SHIM_H
#define LYRE_COPUS_SHIM_H
#include <opus.h>

int lyre_opus_encoder_set_bitrate(OpusEncoder *encoder, int bitsPerSecond);
int lyre_opus_encoder_set_inband_fec(OpusEncoder *encoder, int enabled);
int lyre_opus_encoder_set_packet_loss_perc(OpusEncoder *encoder, int percent);
int lyre_opus_encoder_set_signal_music(OpusEncoder *encoder);
int lyre_opus_encoder_set_vbr_constraint(OpusEncoder *encoder, int constrained);
int lyre_opus_encoder_get_lookahead(OpusEncoder *encoder, int *samples);
int lyre_opus_encoder_reset(OpusEncoder *encoder);
int lyre_opus_decoder_reset(OpusDecoder *decoder);
#endif
