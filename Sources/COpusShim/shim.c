#include "COpusShim.h"

int lyre_opus_encoder_set_bitrate(OpusEncoder *encoder, int bitsPerSecond) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitsPerSecond));
}

int lyre_opus_encoder_set_inband_fec(OpusEncoder *encoder, int enabled) {
    return opus_encoder_ctl(encoder, OPUS_SET_INBAND_FEC(enabled));
}

int lyre_opus_encoder_set_packet_loss_perc(OpusEncoder *encoder, int percent) {
    return opus_encoder_ctl(encoder, OPUS_SET_PACKET_LOSS_PERC(percent));
}

int lyre_opus_encoder_set_signal_music(OpusEncoder *encoder) {
    return opus_encoder_ctl(encoder, OPUS_SET_SIGNAL(OPUS_SIGNAL_MUSIC));
}

int lyre_opus_encoder_set_vbr_constraint(OpusEncoder *encoder, int constrained) {
    return opus_encoder_ctl(encoder, OPUS_SET_VBR_CONSTRAINT(constrained));
}

int lyre_opus_encoder_get_lookahead(OpusEncoder *encoder, int *samples) {
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(samples));
}

int lyre_opus_encoder_reset(OpusEncoder *encoder) {
    return opus_encoder_ctl(encoder, OPUS_RESET_STATE);
}

int lyre_opus_decoder_reset(OpusDecoder *decoder) {
    return opus_decoder_ctl(decoder, OPUS_RESET_STATE);
}
