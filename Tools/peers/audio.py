#!/usr/bin/env python3
"""Audio test helpers for Lyre's end-to-end (Opus network stream) tests and benchmark.

  audio.py sweep OUT.wav [--seconds S] [--rate HZ] [--channels N] [--level-db DB] [--lead-silence S] [--split]
      Write a deterministic 16-bit WAV: log sine sweep 100 Hz -> 8 kHz, 10 ms raised-cosine fades,
      identical channels (with --split, the second channel sweeps down 8 kHz -> 100 Hz instead), peak at
      --level-db dBFS, optionally preceded by silence.
  audio.py compare REF OUT [--out-format wav|raw:s16le:RATE:CHANNELS] [--max-lag-seconds S] [--ref-channel N] [--skew PPM] [--settle S] [--part]
      Align OUT to REF (mono mixes, or REF's channel N from 0; FFT cross-correlation; REF is FFT-resampled
      to OUT's rate if needed) and print one JSON line: lag_samples (at 48 kHz), snr_db, gain, gaps (10 ms
      dropouts), worst_window_snr_db, ref_seconds, out_seconds, matched_seconds. With --part, OUT holds only
      a stretch of REF (a stop, a room removed): REF is cut to the stretch OUT covers (its first to last
      sample above -60 dBFS), and the edges measured are that stretch's.
  audio.py sync A.wav A.csv B.wav B.csv [--skew-a PPM] [--skew-b PPM] [--every S] [--expect-ms MS]
      How far apart two receivers' outputs play the same sound: for 100 ms windows of A's output every S
      seconds (0.25), the matching place in B's output (cross-correlation, sub-sample peak), each place
      turned into the time it left its output through that receiver's presentation log (every block is
      logged; frames leave at 48 kHz on a timeline running PPM fast). Prints one JSON line: windows,
      unmatched (windows of A not found within 5 ms of where --expect-ms says in B), p50_us, p99_us, max_us (of |B - A|) and
      mean_us (signed).
  audio.py presentation LOG.csv
      Print JSON percentiles of |presented_ns - scheduled_ns| in microseconds (first 10 blocks skipped).
  audio.py level FILE [--format wav|raw:s16le:RATE:CHANNELS]
      Print one JSON line: rms_dbfs (of the mono mix; a full-scale sine is -3.01), median_window_dbfs (of
      100 ms windows), sound_dbfs and sound_seconds (the median of the 100 ms windows from the first sample
      above -60 dBFS to the last, and how long that is), first_second_dbfs, last_second_dbfs and seconds.

Exit status 2 (one line on stderr) for unreadable input. Needs numpy only.
"""
import argparse
import csv
import json
import math
import struct
import sys
import wave

import numpy as np

EDGE_S = 0.020          # REF head/tail excluded from SNR and gap analysis (codec warm-up, fades)
WINDOW_S = 0.010        # analysis window for gaps and worst-window SNR
REF_ACTIVE_DB = -40.0   # REF window counts as "signal present" above this RMS (dBFS, full scale = 1.0)
OUT_SILENT_DB = -50.0   # OUT window counts as a dropout below this RMS
SNR_FLOOR, SNR_CEIL = -100.0, 200.0
PART_SILENT = 10 ** (-60 / 20)  # with --part, OUT's stretch of REF runs between samples above -60 dBFS
SKIP_BLOCKS = 10


class InputError(Exception):
    pass


# ---------------------------------------------------------------- sweep

def music(n, rate, channels, seed=7):
    """Music-like material, the same for a seed: a chord of harmonic notes (every harmonic up to 18 kHz, each
    voice with vibrato and its own attack) changing every 250 ms, a kick drum (a falling sine) on every beat
    and a hi-hat (full-band noise bursts) between them, each channel voiced differently. Peak 1.0."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    out = np.zeros((n, channels))
    step = int(0.25 * rate)
    for c in range(channels):
        for start in range(0, n, step):
            end = min(n, start + step)
            tt = t[start:end] - t[start]
            envelope = (1 - np.exp(-tt / 0.005)) * np.exp(-tt / 0.4)
            for _ in range(3):
                f0 = 55.0 * 2 ** (rng.integers(0, 48) / 12)
                vibrato = 0.004 * np.sin(2 * np.pi * 5.5 * tt)
                h = 1
                while h * f0 < 18000 and h <= 40:
                    out[start:end, c] += envelope * np.sin(2 * np.pi * h * f0 * tt * (1 + vibrato) + rng.uniform(0, 6.3)) / h
                    h += 1
        for beat in range(0, n, 2 * step):
            end = min(n, beat + step)
            tt = t[beat:end] - t[beat]
            out[beat:end, c] += 2.0 * np.sin(2 * np.pi * (50 + 80 * np.exp(-tt / 0.03)) * tt) * np.exp(-tt / 0.15)
            hat = beat + step
            if hat < n:
                length = min(n - hat, int(0.05 * rate))
                out[hat:hat + length, c] += 0.6 * rng.standard_normal(length) * np.exp(-np.arange(length) / (0.01 * rate))
    return out / np.max(np.abs(out))


def cmd_sweep(a):
    n = int(round(a.seconds * a.rate))
    f1, f2 = (20.0, 20000.0) if a.signal == "full" else (100.0, 8000.0)
    t = np.arange(n) / a.rate
    k = math.log(f2 / f1)
    x = np.sin(2 * np.pi * f1 * a.seconds / k * np.expm1(t * k / a.seconds))
    nf = min(int(round(0.010 * a.rate)), n // 2)
    ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(nf) / nf)
    if not a.no_fade:
        x[:nf] *= ramp
        x[n - nf:] *= ramp[::-1]
    lead = np.zeros(int(round(a.lead_silence * a.rate)))
    channels = np.repeat(x[:, None], a.channels, axis=1)
    if a.signal == "music":
        channels = music(n, a.rate, a.channels)
    elif a.split and a.channels > 1:
        # The same sweep time-reversed (down from 8 kHz to 100 Hz), so each channel is told from the other.
        channels[:, 1] = x[::-1]
    channels = np.concatenate([np.zeros((len(lead), a.channels)), channels])
    pcm = np.round(channels * 10 ** (a.level_db / 20) * 32767).astype("<i2")
    with wave.open(a.out, "wb") as w:
        w.setnchannels(a.channels)
        w.setsampwidth(2)
        w.setframerate(a.rate)
        w.writeframes(pcm.tobytes())
    return 0


# ---------------------------------------------------------------- reading

def s16_mono(buf, channels, channel=None):
    """Little-endian s16 interleaved bytes -> float64 mono mix, or one channel (full scale 1.0). Partial
    frames dropped."""
    frames = len(buf) // (2 * channels)
    x = np.frombuffer(buf[:frames * 2 * channels], dtype="<i2").reshape(frames, channels)
    if channel is not None:
        if channel >= channels:
            raise InputError(f"no channel {channel} in {channels}-channel audio")
        return x[:, channel].astype(np.float64) / 32768.0
    return x.astype(np.float64).mean(axis=1) / 32768.0


def read_wav(path, channel=None):
    """Minimal RIFF reader (16-bit PCM). Tolerates a data size of 0 or past EOF, as left by a
    writer that was killed before fixing up its header: the data then runs to end of file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise InputError("not a RIFF/WAVE file")
    pos, fmt = 12, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = pos + 8
        if cid == b"fmt ":
            tag, ch, rate, _, _, bits = struct.unpack("<HHIIHH", data[body:body + 16])
            if tag == 0xFFFE and size >= 40:  # WAVE_FORMAT_EXTENSIBLE: real tag opens the GUID
                tag = struct.unpack("<H", data[body + 24:body + 26])[0]
            if tag != 1 or bits != 16 or ch < 1:
                raise InputError(f"unsupported WAV format (tag {tag}, {bits} bits, {ch} channels)")
            fmt = (rate, ch)
        elif cid == b"data":
            if fmt is None:
                raise InputError("data chunk before fmt chunk")
            end = body + size if 0 < size <= len(data) - body else len(data)
            return s16_mono(data[body:end], fmt[1], channel), fmt[0]
        pos = body + size + (size & 1)
    raise InputError("no data chunk")


def read_raw(path, rate, channels):
    with open(path, "rb") as f:
        return s16_mono(f.read(), channels), rate


def out_format(s):
    if s == "wav":
        return None
    parts = s.split(":")
    try:
        if len(parts) == 4 and parts[:2] == ["raw", "s16le"] and int(parts[2]) > 0 and int(parts[3]) > 0:
            return int(parts[2]), int(parts[3])
    except ValueError:
        pass
    raise argparse.ArgumentTypeError("expected wav or raw:s16le:RATE:CHANNELS")


# ---------------------------------------------------------------- analysis

def fft_size(n):
    """Smallest 2^a * 3^b * 5^c >= n: a length numpy's FFT handles fast."""
    best, p2 = 1 << max(0, (n - 1).bit_length()), 1
    while p2 < best:
        p3 = p2
        while p3 < best:
            p5 = p3
            while p5 < n:
                p5 *= 5
            best, p3 = min(best, p5), p3 * 3
        p2 *= 2
    return best


def resample(x, src, dst):
    """Band-limited resampling by zero-padding/truncating the spectrum. Exact rational ratio; the
    input is zero-padded at the end so the FFT's circular wrap cannot fold the end onto the start."""
    if src == dst or len(x) == 0:
        return x
    g = math.gcd(src, dst)
    p, q = dst // g, src // g                  # output length = input length * p / q
    n_in = fft_size(-(-(len(x) + src // 10) // q)) * q  # >= 0.1 s of padding, multiple of q
    n_out = n_in * p // q
    spec = np.fft.rfft(x, n_in)
    out = np.zeros(n_out // 2 + 1, dtype=complex)
    k = min(len(spec), len(out))
    out[:k] = spec[:k]
    out[k - 1] = 0                             # drop the shared top bin (a Nyquist bin of one side)
    y = np.fft.irfft(out, n_out) * (n_out / n_in)
    return y[:int(round(len(x) * p / q))]


def stretch(x, factor):
    """Band-limited resampling by any factor (the output is factor times as long): for an output whose
    clock ran factor - 1 fast. One FFT over the whole signal, zero-padded so its wrap cannot fold."""
    if factor == 1 or len(x) == 0:
        return x
    n_in = fft_size(len(x) + 4800)
    n_out = int(round(n_in * factor))
    spec = np.fft.rfft(x, n_in)
    out = np.zeros(n_out // 2 + 1, dtype=complex)
    k = min(len(spec), len(out)) - 1
    out[:k] = spec[:k]
    return np.fft.irfft(out, n_out)[:int(round(len(x) * factor))] * (n_out / n_in)


def fractional_align(r, o, seg=4800, margin=64, reach=2.0):
    """REF shifted, 100 ms at a time, by the fraction of a sample that best matches OUT there: an output
    played at exact fractional times (drift correction) is the input delayed by a fraction that changes
    slowly, which a whole-sample comparison would count as noise at high frequencies. Shifts of up to
    `reach` samples are searched on a 1/32-sample grid; the timing itself is what `sync` measures."""
    shifted = np.zeros(len(r))
    taus = np.arange(-reach, reach + 1e-9, 1 / 32)
    padded = np.concatenate([np.zeros(margin), r, np.zeros(margin + seg)])
    for s0 in range(0, len(r), seg):
        rs = padded[s0:s0 + seg + 2 * margin]
        os_ = np.zeros(seg + 2 * margin)
        chunk = o[s0:s0 + seg]
        os_[margin:margin + len(chunk)] = chunk
        n = len(rs)
        R, O = np.fft.rfft(rs), np.fft.rfft(os_)
        w = 2 * np.pi * np.arange(len(R)) / n
        cross = O * np.conj(R)
        # Correlation at each fractional lag tau: OUT matches REF delayed by tau.
        scores = np.real(np.exp(1j * np.outer(taus, w)) @ cross)
        best = taus[int(np.argmax(scores))]
        # The correlation's peak is biased by the window's edges (OUT is cut to the chunk, REF is not): of
        # the grid points around it, and no shift at all, keep the one that leaves the least residual. An
        # output that is the input sample for sample is then compared as it is, not shifted by 1/32 sample.
        candidates = []
        for tau in sorted({0.0, *(best + k / 32 for k in range(-2, 3))}):
            moved = np.fft.irfft(R * np.exp(-1j * w * tau), n)[margin:margin + len(chunk)]
            candidates.append((float(np.sum((chunk - moved) ** 2)), tau, moved))
        shifted[s0:s0 + len(chunk)] = min(candidates, key=lambda c: (c[0], abs(c[1])))[2]
    return shifted


def find_lag(ref, out, max_lag):
    """Lag L maximising |sum out[n+L]*ref[n]|, L in [-max_lag, max_lag]."""
    seg = out[:max_lag + len(ref)]
    if not np.any(seg) or not np.any(ref):
        return 0                               # nothing to align (silent or empty)
    n = fft_size(len(seg) + len(ref))
    corr = np.fft.irfft(np.fft.rfft(seg, n) * np.conj(np.fft.rfft(ref, n)), n)
    # Lags 0 … len(seg)−1 sit at the front of the circular correlation and −1 … −(len(ref)−1) at its end; n is
    # at least their sum, so nothing between them is a lag (halving n there lost every lag past n/2).
    lags = np.arange(n)
    lags[lags >= len(seg)] -= n
    ok = (lags <= min(max_lag, len(seg) - 1)) & (lags >= -min(max_lag, len(ref) - 1))
    if not ok.any():
        return 0
    return int(lags[ok][np.argmax(np.abs(corr[ok]))])


def ratio_db(signal, noise):
    if signal <= 0:
        return SNR_FLOOR
    if noise <= 0:
        return SNR_CEIL
    return float(min(max(10 * math.log10(signal / noise), SNR_FLOOR), SNR_CEIL))


def cmd_compare(a):
    try:
        ref, ref_rate = read_wav(a.ref, a.ref_channel)
        out, rate = read_wav(a.out) if a.out_format is None else read_raw(a.out, *a.out_format)
    except (OSError, InputError, struct.error) as e:
        print(f"audio.py compare: cannot read input: {e}", file=sys.stderr)
        return 2
    ref_seconds, out_seconds = len(ref) / ref_rate, len(out) / rate
    # Energy out over energy in, whole files, no alignment: a level that one lost or added sample cannot move
    # (the fitted `gain` can: a slip half way puts half the song off the lag it is fitted at).
    ref_energy, out_energy = float(np.dot(ref, ref)), float(np.dot(out, out))
    level_db = ratio_db(out_energy * ref_rate / rate, ref_energy)
    ref = stretch(resample(ref, ref_rate, rate), 1 + a.skew * 1e-6)
    lag = find_lag(ref, out, int(round(a.max_lag_seconds * rate)))

    # OUT aligned to REF; samples OUT does not have (before its start, after its end) count as silence.
    aligned = np.zeros(len(ref))
    lo, hi = max(0, -lag), min(len(ref), len(out) - lag)
    if hi > lo:
        aligned[lo:hi] = out[lo + lag:hi + lag]
    matched_seconds = max(0, hi - lo) / rate
    if a.part:
        # OUT holds a stretch of REF only (a stop, a room removed or joined): REF is what OUT covers, from
        # the first aligned sample that is not silence to the last, and its edges are that stretch's.
        sounding = np.flatnonzero(np.abs(aligned) > PART_SILENT)
        if len(sounding) == 0:
            print("audio.py compare: the output is silent", file=sys.stderr)
            return 2
        first, last = int(sounding[0]), int(sounding[-1]) + 1
        ref, aligned, lag = ref[first:last], aligned[first:last], lag + first
        matched_seconds = len(ref) / rate

    edge, win = int(round(EDGE_S * rate)), max(1, int(round(WINDOW_S * rate)))
    # --settle: the SNR and the gaps leave out OUT's first S seconds, while a room's clock control catches its
    # DAC's skew up and the output is not yet where one fixed stretch puts it (the sync figures measure that).
    settle = int(round(a.settle * rate))
    r, o = ref[edge + settle:len(ref) - edge], aligned[edge + settle:len(ref) - edge]
    r = fractional_align(r, o)
    rr = float(np.dot(r, r))
    gain = float(np.dot(o, r) / rr) if rr > 0 else 0.0
    resid = o - gain * r
    snr = ratio_db(gain * gain * rr, float(np.dot(resid, resid)))

    nw = len(r) // win
    rw, ow, ew = (v[:nw * win].reshape(nw, win) for v in (r, o, resid))
    db = lambda m: 10 * np.log10(np.mean(m * m, axis=1) + 1e-30)
    active = db(rw) > REF_ACTIVE_DB
    gaps = int(np.count_nonzero(active & (db(ow) < OUT_SILENT_DB)))
    win_snr = [ratio_db(gain * gain * float(np.dot(x, x)), float(np.dot(e, e)))
               for x, e in zip(rw[active], ew[active])]
    # The edges too, first sample to last, at the whole-sample lag (a meter of windows missed a cut ending):
    # the SNR of REF's first and last EDGE_S against OUT, and the lag of REF's first and last half second
    # found on their own, which differ when a sample was lost or added anywhere between them.
    head, tail = ref[:edge], ref[len(ref) - edge:]
    ahead, atail = aligned[:edge], aligned[len(ref) - edge:]
    edge_snr = lambda x, y: ratio_db(gain * gain * float(np.dot(x, x)), float(np.dot(y - gain * x, y - gain * x)))
    half = min(len(ref) // 2, int(0.5 * rate))
    reach = int(0.1 * rate)
    def part_lag(start):
        # To a hundredth of a sample: the correlation's peak, refined by a parabola through it and its
        # neighbours (a whole-sample argmax wavers by one on low notes through a lossy codec).
        seg = ref[start:start + half]
        lo = max(0, start + lag - reach)
        whole = lo + find_lag(seg, out[lo:], 2 * reach)
        c = [float(np.dot(out[whole + d:whole + d + half], seg)) if 0 <= whole + d and whole + d + half <= len(out) else 0.0
             for d in (-1, 0, 1)]
        bend = c[0] - 2 * c[1] + c[2]
        return round(whole - start + (0.5 * (c[0] - c[2]) / bend if bend < 0 else 0.0), 2)
    print(json.dumps({
        "lag_samples": int(round(lag * 48000 / rate)),
        "head_snr_db": round(edge_snr(head, ahead), 3),
        "tail_snr_db": round(edge_snr(tail, atail), 3),
        "head_lag_samples": part_lag(0),
        "tail_lag_samples": part_lag(len(ref) - half),
        "snr_db": round(snr, 3),
        "gain": round(gain, 6),
        "level_db": round(level_db, 3),
        "gaps": gaps,
        "worst_window_snr_db": round(min(win_snr), 3) if win_snr else round(snr, 3),
        "ref_seconds": round(ref_seconds, 6),
        "out_seconds": round(out_seconds, 6),
        "matched_seconds": round(matched_seconds, 6),
    }))
    return 0


def cmd_separate(a):
    """OUT holds MAIN (ducked while ANNOUNCE plays) plus ANNOUNCE: each found at its own lag, then, window by
    window, OUT fitted as g_main * MAIN + g_announce * ANNOUNCE by least squares. Reports the main's level
    before, during and after the announcement, how the ramps fall around it, and each signal's SNR. With
    --then, the same announcement's audio came again later (a second signal, at a lag of its own): the main's
    level between the two and under the second, and the ramps around the second, are reported too."""
    try:
        main, rate = read_wav(a.main)
        anns = [read_wav(path) for path in [a.announce] + ([a.then] if a.then else [])]
        out, out_rate = read_wav(a.out)
    except (OSError, InputError, struct.error) as e:
        print(f"audio.py separate: cannot read input: {e}", file=sys.stderr)
        return 2
    if any(r != rate for r in [out_rate] + [r for _, r in anns]):
        print("audio.py separate: MAIN, ANNOUNCE and OUT must share one rate", file=sys.stderr)
        return 2
    anns = [x for x, _ in anns]
    max_lag = int(round(a.max_lag_seconds * rate))
    # The announcements first, from the output as it is; the main then from what they leave, so that neither
    # lag is pulled by the other signal.
    def placed(x, lag):
        y = np.zeros(len(out))
        lo, hi = max(0, -lag), min(len(x), len(out) - lag)
        if hi > lo:
            y[lo + lag:hi + lag] = x[lo:hi]
        return y
    lags = [find_lag(x, out, max_lag) for x in anns]
    bx = sum(placed(x, lag) for x, lag in zip(anns, lags))
    bb = float(np.dot(bx, bx))
    rest = out - (float(np.dot(out, bx)) / bb if bb > 0 else 0.0) * bx
    lag_a = find_lag(main, rest, max_lag)
    ax = placed(main, lag_a)
    win = max(1, int(round(a.window * rate)))
    nw = len(out) // win
    A, B, O = (v[:nw * win].reshape(nw, win) for v in (ax, bx, out))
    aa, ab, bbw = np.sum(A * A, axis=1), np.sum(A * B, axis=1), np.sum(B * B, axis=1)
    ao, bo = np.sum(A * O, axis=1), np.sum(B * O, axis=1)
    det = aa * bbw - ab * ab
    both = det > 1e-12 * (aa * bbw + 1e-30)
    only_a = ~both & (aa > 0)
    # The announcement alone: before a main that starts under it.
    only_b = ~both & (aa == 0) & (bbw > 0)
    ga, gb = np.zeros(nw), np.zeros(nw)
    ga[both] = (ao[both] * bbw[both] - bo[both] * ab[both]) / det[both]
    gb[both] = (bo[both] * aa[both] - ao[both] * ab[both]) / det[both]
    ga[only_a] = ao[only_a] / aa[only_a]
    gb[only_b] = bo[only_b] / bbw[only_b]
    db = lambda g: 20 * np.log10(np.maximum(np.abs(g), 1e-6))
    # Where each announcement's first and last samples are in OUT.
    spans = [(lag, lag + len(x)) for x, lag in zip(anns, lags)]
    (start, end), last_end = spans[0], spans[-1][1]
    centre = (np.arange(nw) + 0.5) * win
    loud_a = 10 * np.log10(aa / win + 1e-30) > REF_ACTIVE_DB
    def median_db(mask):
        m = mask & loud_a
        return round(float(np.median(db(ga[m]))), 2) if m.any() else None
    margin, back = a.margin * rate, a.back * rate
    before = median_db(centre < start - margin)
    during = [median_db((centre > s + margin) & (centre < e - margin)) for s, e in spans]
    after = median_db(centre > last_end + back)
    # The main's lowest level once the announcement is over, each the median of 5 windows (50 ms, a ramp's
    # scale; one window's fit of music-like sound strays by a dB): a main that starts after its audio ended
    # (its sender still on) has nothing to come back from, so no dip.
    past = np.flatnonzero(loud_a & (centre > last_end + win))
    runs = [np.median(db(ga[past[i:i + 5]])) for i in range(len(past) - 4) if past[i + 4] - past[i] == 4]
    lowest_after = round(float(np.min(runs)), 2) if runs else None
    # The ramps: where the main first sits within 1 dB of its level under an announcement, from that
    # announcement's first sample, and where it is first back within 1 dB of its level before (or after, for
    # a main that started under the announcement), from its last.
    level = before if before is not None else after
    def ramp_down(s, e, under):
        if under is None:
            return None
        near = np.flatnonzero(loud_a & (np.abs(db(ga) - under) < 1) & (centre > s - 0.5 * rate) & (centre < e))
        return round(float((near[0] * win - s) / rate * 1000), 1) if len(near) else None
    def ramp_up(e):
        if level is None:
            return None
        up = np.flatnonzero(loud_a & (np.abs(db(ga) - level) < 1) & (centre > e))
        return round(float((up[0] * win + win - e) / rate * 1000), 1) if len(up) else None
    fit = (ga[:, None] * A + gb[:, None] * B)
    resid = O - fit
    span = np.zeros(nw, dtype=bool)
    for s, e in spans:
        span |= (np.arange(nw) * win >= s) & ((np.arange(nw) + 1) * win <= e)
    b_energy = float(np.sum((gb[:, None] * B)[span] ** 2))
    a_energy = float(np.sum((ga[:, None] * A)[~span] ** 2))
    report = {
        "main_lag_samples": int(lag_a),
        "announce_lag_samples": int(lags[0]),
        "announce_start_s": round(start / rate, 4),
        "announce_end_s": round(end / rate, 4),
        "main_db_before": before,
        "main_db_during": during[0],
        "main_db_after": after,
        "main_db_lowest_after": lowest_after,
        "ramp_down_ms": ramp_down(start, end, during[0]),
        "ramp_up_ms": ramp_up(end),
        "announce_gain_db": round(float(np.median(db(gb[span]))), 2) if span.any() else None,
        "announce_snr_db": round(ratio_db(b_energy, float(np.sum(resid[span] ** 2))), 3) if span.any() else None,
        "main_snr_db": round(ratio_db(a_energy, float(np.sum(resid[~span] ** 2))), 3),
        "out_seconds": round(len(out) / rate, 4),
    }
    if a.then:
        (start2, end2) = spans[1]
        report.update({
            "again_lag_samples": int(lags[1]),
            "again_start_s": round(start2 / rate, 4),
            "again_end_s": round(end2 / rate, 4),
            # Between the two: from `back` after the first's end to `margin` before the second's start.
            "main_db_between": median_db((centre > end + back) & (centre < start2 - margin)),
            "main_db_during_again": during[1],
            "ramp_down_again_ms": ramp_down(start2, end2, during[1]),
            "ramp_up_again_ms": ramp_up(end2),
        })
    print(json.dumps(report))
    return 0


def cmd_splice(a):
    """REF played with one pause in it: OUT is REF up to a point, silence, then REF again from a point. Says
    where OUT stopped in REF (heard_before: REF samples heard before the pause) and where it went on
    (resumed_at), so lost = resumed_at - heard_before: samples never played (> 0) or played twice (< 0), by
    matching runs of samples; edges_lost is the same from the pause's two edges, to the sample when the output
    stops and starts hard."""
    ref, ref_rate = read_wav(a.ref)
    out, rate = read_wav(a.out)
    ref = resample(ref, ref_rate, rate)
    blanked = {}
    if a.blank:
        # Another sound that played in the pause (an announcement that paused REF): found in OUT, measured
        # against OUT where it lies (gain and SNR: REF is not under it if the pause was real), and blanked,
        # with 20 ms either side for its codec's tails, so that the pause is silence again.
        ann, ann_rate = read_wav(a.blank)
        ann = resample(ann, ann_rate, rate)
        lag_b = find_lag(ann, out, len(out))
        lo, hi = max(0, lag_b), min(len(out), lag_b + len(ann))
        seg, want = out[lo:hi], ann[lo - lag_b:hi - lag_b]
        g = float(np.dot(seg, want) / (np.dot(want, want) or 1.0))
        blanked = {"blank_start_s": round(lag_b / rate, 4), "blank_gain_db": round(20 * np.log10(max(abs(g), 1e-6)), 2),
                   "blank_snr_db": round(ratio_db(float(np.dot(g * want, g * want)), float(np.sum((seg - g * want) ** 2))), 3)}
        pad = int(0.02 * rate)
        out = out.copy()
        out[max(0, lo - pad):min(len(out), hi + pad)] = 0
    # The pause: the longest run of digital silence (|x| < 2^-15) in OUT past its first audio.
    quiet = np.abs(out) < 1.0 / 32768
    first = int(np.argmax(~quiet))
    runs, start = [], None
    for i in range(first, len(out)):
        if quiet[i] and start is None:
            start = i
        elif not quiet[i] and start is not None:
            runs.append((start, i))
            start = None
    if not runs:
        print(json.dumps({"error": "no pause found in OUT"}))
        return 1
    g0, g1 = max(runs, key=lambda r: r[1] - r[0])
    half = int(0.5 * rate)
    lag1 = find_lag(ref[:half], out[:g0], g0)
    lag2 = g1 + find_lag(ref[len(ref) - half:], out[g1:], len(out) - g1) - (len(ref) - half)
    scale = float(np.max(np.abs(ref))) or 1.0
    gain = float(np.dot(out[lag1:lag1 + half], ref[:half]) / (np.dot(ref[:half], ref[:half]) or 1.0))
    run = 32

    def matches(lag, n):
        lo, hi = n + lag, n + lag + run
        if n < 0 or n + run > len(ref) or lo < 0 or hi > len(out):
            return False
        return bool(np.all(np.abs(out[lo:hi] - gain * ref[n:n + run]) < 0.1 * scale))
    # Heard before: past the last sample that OUT holds at lag1; resumed: the first it holds at lag2.
    n = g0 - lag1 - run
    while n > 0 and not matches(lag1, n):
        n -= 1
    heard = n + run
    m = max(0, g1 - lag2 - 4 * run)
    while m < len(ref) - run and not matches(lag2, m):
        m += 1
    # How clean the first 50 ms after the resume are (a decoder that kept the old stream's state played them
    # up to 7 dB too loud), against REF at the gain before the pause.
    n = min(int(0.05 * rate), len(ref) - m, len(out) - (m + lag2))
    seg, want = out[m + lag2:m + lag2 + n], gain * ref[m:m + n]
    resume_snr = ratio_db(float(np.dot(want, want)), float(np.dot(seg - want, seg - want))) if n > 0 else SNR_FLOOR
    # The same from the pause's edges, sample-exact where the output stops and starts hard (its last and first
    # samples are audio, not a fade): where the 100 ms either side of the pause lie in REF, to the sample (the
    # lags of the whole, taken at the song's ends, may be a sample off there after the output's first bend).
    def local_lag(lag, lo, hi):
        w = out[lo:hi]
        best, best_err = lag, None
        for cand in range(lag - 8, lag + 9):
            if lo - cand < 0 or hi - cand > len(ref):
                continue
            err = float(np.sum((w - gain * ref[lo - cand:hi - cand]) ** 2))
            if best_err is None or err < best_err:
                best, best_err = cand, err
        return best
    w = int(0.1 * rate)
    edge1, edge2 = local_lag(lag1, max(0, g0 - w), g0), local_lag(lag2, g1, min(len(out), g1 + w))
    # REF's end: how many of its last samples OUT never played (a playback closed before it had played out),
    # and how clean the last 100 ms that it did play are.
    end_missing = max(0, len(ref) + edge2 - len(out))
    last = len(ref) - end_missing  # REF's end as far as OUT holds it
    k = min(w, last)
    tail, want = out[last - k + edge2:last + edge2], gain * ref[last - k:last]
    end_snr = ratio_db(float(np.dot(want, want)), float(np.dot(tail - want, tail - want))) if k > 0 else SNR_FLOOR
    print(json.dumps({"heard_before": heard, "resumed_at": m, "lost": m - heard, "resume_snr_db": round(resume_snr, 3),
                      "pause_seconds": round((g1 - g0) / rate, 3), "lag_before": lag1, "lag_after": lag2,
                      "edges_lost": (g1 - edge2) - (g0 - edge1), "edge_lags": [edge1, edge2],
                      "end_missing": end_missing, "end_snr_db": round(end_snr, 3), **blanked}))
    return 0


# ---------------------------------------------------------------- sync between receivers

def output_clock(log, skew_ppm):
    """(block start frames, block presented ns, ns per frame) from a presentation log that has every block."""
    with open(log, newline="") as f:
        rows = [(int(r["presented_ns"]), int(r["frames"])) for r in csv.DictReader(f)]
    if not rows:
        raise InputError(f"no blocks in {log}")
    frames = np.array([r[1] for r in rows], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(frames)[:-1]])
    return starts, np.array([r[0] for r in rows], dtype=np.float64), 1e9 / 48000 / (1 + skew_ppm * 1e-6)


def time_of(clock, k):
    """When output frame k (may be fractional) left: its block's presentation plus its place in the block."""
    starts, presented, fns = clock
    i = max(0, int(np.searchsorted(starts, k, side="right")) - 1)
    return presented[i] + (k - starts[i]) * fns


def frame_at(clock, t):
    """The output frame that left at time t (the inverse of time_of, to the nearest frame)."""
    starts, presented, fns = clock
    i = max(0, int(np.searchsorted(presented, t, side="right")) - 1)
    return int(round(starts[i] + (t - presented[i]) / fns))


def cmd_sync(a):
    try:
        xa, ra = read_wav(a.a_wav)
        xb, rb = read_wav(a.b_wav)
        ca, cb = output_clock(a.a_log, a.skew_a), output_clock(a.b_log, a.skew_b)
    except (OSError, InputError, KeyError, ValueError, struct.error) as e:
        print(f"audio.py sync: cannot read input: {e}", file=sys.stderr)
        return 2
    if ra != 48000 or rb != 48000:
        print("audio.py sync: both outputs must be 48 kHz", file=sys.stderr)
        return 2
    # 100 ms windows, matched within ±5 ms of where B's log says (wider would let a sweep's low, nearly
    # periodic start match a period away); a window not found there is counted as unmatched.
    win, search = 4800, 240
    factor = (1 + a.skew_a * 1e-6) / (1 + a.skew_b * 1e-6)
    offsets, times, unmatched, unmatched_at = [], [], 0, []
    for a0 in range(0, len(xa) - win, int(a.every * 48000)):
        w = xa[a0:a0 + win]
        # Only windows where A plays throughout: one that straddles A's start (a room joining) or end
        # holds some silence that B, playing on, does not.
        blocks = w.reshape(10, -1)
        if 10 * math.log10(float(np.min(np.mean(blocks * blocks, axis=1))) + 1e-30) < REF_ACTIVE_DB:
            continue
        t = time_of(ca, a0)
        b_guess = frame_at(cb, t + a.expect_ms * 1e6)
        lo, hi = b_guess - search, b_guess + search + win
        if lo < 0 or hi > len(xb):
            continue
        # B's stretch put on A's frame rate first: rooms whose clocks differ by 300 ppm drift a radian
        # apart within one window at 5 kHz, which would blur the match.
        seg = stretch(xb[lo:hi], factor)
        n = fft_size(len(seg) + win)
        # The correlation on a 1/8-sample grid (zero-padded spectrum): a window of a sweep is nearly
        # periodic, and sampled only at whole lags its peak can lose to the next period's.
        up = 8
        spec = np.fft.rfft(seg, n) * np.conj(np.fft.rfft(w, n))
        fine = np.fft.irfft(spec, n * up)[:(len(seg) - win) * up + 1] * up
        energy = np.sqrt(np.convolve(seg * seg, np.ones(win), "valid") * float(np.dot(w, w))) + 1e-30
        norm = fine / np.interp(np.arange(len(fine)) / up, np.arange(len(energy)), energy)
        p = int(np.argmax(norm))
        if norm[p] < 0.9 or p == 0 or p == len(norm) - 1:
            unmatched += 1  # no clear match: B silent there, or more than 5 ms off
            unmatched_at.append(int(t))
            continue
        y0, y1, y2 = norm[p - 1], norm[p], norm[p + 1]
        frac = 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2) if (y0 - 2 * y1 + y2) != 0 else 0.0
        b_exact = lo + (p + frac) / up / factor
        offsets.append((time_of(cb, b_exact) - t) / 1000.0)
        times.append(t)
    if not offsets:
        print("audio.py sync: no window of A was found in B", file=sys.stderr)
        return 1
    o = np.array(offsets)
    ab = np.abs(o)
    # Settled: the windows from --settle seconds after the first one on (the rooms' controllers catching up
    # with their skews at the start are left out).
    since = (np.array(times) - times[0]) / 1e9
    settled = ab[since >= a.settle]
    # Converged: from the first window after which every window is within --within µs (the controllers have
    # caught their skews up), as seconds after the first window.
    outside = np.nonzero(ab > a.within)[0]
    converged = 0.0 if len(outside) == 0 else (float(since[outside[-1] + 1]) if outside[-1] + 1 < len(ab) else None)
    print(json.dumps({"windows": len(o), "unmatched": unmatched,
                      # When each unmatched window of A left its output (A's log's clock, ns).
                      "unmatched_at": unmatched_at, "p50_us": round(float(np.percentile(ab, 50)), 3),
                      "p99_us": round(float(np.percentile(ab, 99)), 3), "max_us": round(float(ab.max()), 3),
                      "mean_us": round(float(o.mean()), 3),
                      "converged_s": None if converged is None else round(converged, 3),
                      # The five windows furthest apart, as [seconds after the first, µs], for a failure to show.
                      "worst": [[round(float(since[i]), 2), round(float(o[i]), 1)] for i in np.argsort(-ab)[:5]],
                      "settled_windows": int(len(settled)),
                      "settled_p99_us": round(float(np.percentile(settled, 99)), 3) if len(settled) else None,
                      "settled_max_us": round(float(settled.max()), 3) if len(settled) else None}))
    return 0


# ---------------------------------------------------------------- presentation

def cmd_level(a):
    try:
        x, rate = read_wav(a.file) if a.format is None else read_raw(a.file, *a.format)
    except (OSError, InputError) as e:
        print(f"audio.py level: cannot read {a.file}: {e}", file=sys.stderr)
        return 2
    if len(x) == 0:
        print(f"audio.py level: no audio in {a.file}", file=sys.stderr)
        return 2
    rms = float(np.sqrt(np.mean(x * x)))
    # The median of 100 ms windows' levels: a steady signal's level, whatever a dropout did to a few windows.
    n = max(1, rate // 10)
    windows = [float(np.sqrt(np.mean(x[i:i + n] * x[i:i + n]))) for i in range(0, len(x) - n + 1, n)] or [rms]
    median = float(np.median(windows))
    # The level of the first and the last second of sound (from the first sample above -60 dBFS to the last),
    # each the median of its 100 ms windows: a level changed while the sound played shows between them.
    sounding = np.flatnonzero(np.abs(x) > 10 ** (-60 / 20))
    def edge_level(start, end):
        part = x[start:end]
        levels = [float(np.sqrt(np.mean(part[i:i + n] ** 2))) for i in range(0, len(part) - n + 1, n)] or [0.0]
        return round(20 * math.log10(max(float(np.median(levels)), 1e-12)), 3)
    first, last = (int(sounding[0]), int(sounding[-1]) + 1) if len(sounding) else (0, 0)
    print(json.dumps({"rms_dbfs": round(20 * math.log10(max(rms, 1e-12)), 3),
                      "median_window_dbfs": round(20 * math.log10(max(median, 1e-12)), 3),
                      # The sound's level, whatever silence a recording holds before it starts or after it ends.
                      "sound_dbfs": edge_level(first, last),
                      "sound_seconds": round((last - first) / rate, 3),
                      "first_second_dbfs": edge_level(first, min(last, first + rate)),
                      "last_second_dbfs": edge_level(max(first, last - rate), last),
                      "seconds": round(len(x) / rate, 3)}))
    return 0


def cmd_presentation(a):
    try:
        with open(a.log, newline="") as f:
            # Blocks written while nothing was scheduled (scheduled_ns 0) are silence, not presentation.
            rows = [r for r in csv.DictReader(f) if r.get("presented_ns") and r.get("scheduled_ns") != "0"]
            err = [abs(int(r["presented_ns"]) - int(r["scheduled_ns"])) / 1000.0 for r in rows]
    except (OSError, KeyError, ValueError, TypeError) as e:
        print(f"audio.py presentation: cannot read {a.log}: {e}", file=sys.stderr)
        return 2
    err = np.array(err[SKIP_BLOCKS:])
    if len(err) == 0:
        print(f"audio.py presentation: no blocks after the first {SKIP_BLOCKS} in {a.log}", file=sys.stderr)
        return 2
    print(json.dumps({"blocks": len(err),
                      "p50_us": round(float(np.percentile(err, 50)), 3),
                      "p99_us": round(float(np.percentile(err, 99)), 3),
                      "max_us": round(float(err.max()), 3),
                      "mean_us": round(float(err.mean()), 3)}))
    return 0


def cmd_heard(a):
    """When the session's audio frame F was heard: the first block with audio gives the RTP time of the
    first audio frame (R0 = rtp_time + frames - audio_frames, audio fills the block's end); the block holding
    R0 + F gives its presentation time. Blocks are `frames` long (5 to 50 ms)."""
    try:
        with open(a.log, newline="") as f:
            rows = [(int(r["rtp_time"]), int(r["presented_ns"]), int(r["audio_frames"]), int(r["frames"]))
                    for r in csv.DictReader(f) if r["scheduled_ns"] != "0"]
    except (OSError, KeyError, ValueError, TypeError) as e:
        print(f"audio.py heard: cannot read {a.log}: {e}", file=sys.stderr)
        return 2
    first = next((r for r in rows if r[2] > 0), None)
    if first is None:
        print(f"audio.py heard: no audio in {a.log}", file=sys.stderr)
        return 2
    r0 = (first[0] + first[3] - first[2]) % 2**32
    target = (r0 + a.frame) % 2**32
    for rtp, presented, _, block in rows:
        into = (target - rtp) % 2**32
        if into < block:
            print(json.dumps({"frame": a.frame, "rtp": target, "presented_ns": presented + round(into * 1e9 / 48000)}))
            return 0
    print(f"audio.py heard: frame {a.frame} was not presented", file=sys.stderr)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="write a test signal WAV: a log sine sweep, or music-like material")
    s.add_argument("out", metavar="OUT.wav")
    s.add_argument("--seconds", type=float, default=3.0)
    s.add_argument("--rate", type=int, default=48000)
    s.add_argument("--channels", type=int, default=2)
    s.add_argument("--level-db", type=float, default=-6.0, help="peak level in dBFS")
    s.add_argument("--lead-silence", type=float, default=0.0, help="seconds of silence before the sweep")
    s.add_argument("--split", action="store_true", help="second channel sweeps down instead")
    s.add_argument("--no-fade", action="store_true", help="start and end at full level, as a chime that ends loud")
    s.add_argument("--signal", choices=["sweep", "full", "music"], default="sweep",
                   help="sweep: 100 Hz to 8 kHz; full: 20 Hz to 20 kHz; music: music-like material (chords, drums)")
    c = sub.add_parser("compare", help="align OUT to REF and measure it")
    c.add_argument("ref", metavar="REF")
    c.add_argument("out", metavar="OUT")
    c.add_argument("--out-format", type=out_format, default=None, metavar="wav|raw:s16le:RATE:CHANNELS")
    c.add_argument("--max-lag-seconds", type=float, default=10.0)
    c.add_argument("--ref-channel", type=int, default=None, help="compare against this channel of REF (from 0)")
    c.add_argument("--skew", type=float, default=0.0, metavar="PPM", help="OUT's clock ran this much fast")
    c.add_argument("--settle", type=float, default=0.0, metavar="S",
                   help="leave OUT's first S seconds out of the SNR and the gaps (a clock control catching up)")
    c.add_argument("--part", action="store_true",
                   help="OUT holds a stretch of REF only (stopped, removed or joined): measure that stretch")
    y = sub.add_parser("sync", help="offset between two receivers' outputs of the same sound")
    y.add_argument("a_wav", metavar="A.wav")
    y.add_argument("a_log", metavar="A.csv")
    y.add_argument("b_wav", metavar="B.wav")
    y.add_argument("b_log", metavar="B.csv")
    y.add_argument("--skew-a", type=float, default=0.0, metavar="PPM")
    y.add_argument("--skew-b", type=float, default=0.0, metavar="PPM")
    y.add_argument("--every", type=float, default=0.25, metavar="S")
    y.add_argument("--settle", type=float, default=5.0, metavar="S",
                   help="the settled figures leave out the windows of the first S seconds")
    y.add_argument("--within", type=float, default=100.0, metavar="US",
                   help="converged_s: when every window from then on is within this many µs")
    y.add_argument("--expect-ms", type=float, default=0.0, metavar="MS",
                   help="look for A's sound this much later in B (a room with an output delay plays early: negative)")
    se = sub.add_parser("separate", help="OUT as MAIN, ducked while ANNOUNCE plays, plus ANNOUNCE: levels, ramps, SNRs")
    se.add_argument("main", metavar="MAIN")
    se.add_argument("announce", metavar="ANNOUNCE")
    se.add_argument("out", metavar="OUT")
    se.add_argument("--then", metavar="WAV", help="the announcement's audio came again, later in OUT: this signal")
    se.add_argument("--max-lag-seconds", type=float, default=20.0)
    se.add_argument("--window", type=float, default=0.01, metavar="S", help="fit windows (10 ms)")
    se.add_argument("--margin", type=float, default=0.1, metavar="S", help="left out either side of the announcement's ends")
    se.add_argument("--back", type=float, default=0.5, metavar="S", help="the level after is read from this long after its end")
    sp = sub.add_parser("splice", help="where a paused play of REF stopped and went on in OUT")
    sp.add_argument("ref", metavar="REF")
    sp.add_argument("out", metavar="OUT")
    sp.add_argument("--blank", metavar="WAV", help="another sound that played in the pause: measured where it lies in OUT, then blanked")
    p = sub.add_parser("presentation", help="summarise a receiver presentation log")
    p.add_argument("log", metavar="LOG.csv")
    h = sub.add_parser("heard", help="when audio frame F of the session was presented")
    h.add_argument("log", metavar="LOG.csv")
    h.add_argument("--frame", type=int, required=True)
    v = sub.add_parser("level", help="RMS level of a recording")
    v.add_argument("file", metavar="FILE")
    v.add_argument("--format", type=out_format, default=None, metavar="wav|raw:s16le:RATE:CHANNELS")
    a = ap.parse_args()
    if a.cmd == "sweep" and (a.seconds <= 0.02 or a.rate <= 0 or a.channels < 1 or a.lead_silence < 0):
        ap.error("need --seconds > 0.02, --rate > 0, --channels >= 1, --lead-silence >= 0")
    return {"sweep": cmd_sweep, "compare": cmd_compare, "separate": cmd_separate, "splice": cmd_splice, "sync": cmd_sync, "presentation": cmd_presentation, "heard": cmd_heard,
            "level": cmd_level}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
