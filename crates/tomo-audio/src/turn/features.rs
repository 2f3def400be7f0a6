//! Whisper-style log-mel features, computed the way Smart Turn v3 was trained on: the last 8 s of 16 kHz
//! audio (zeros in front when shorter), normalised to zero mean and unit variance, a centred STFT (400-point
//! periodic Hann, hop 160, reflect padding), an 80-band Slaney mel filter bank, `log10`, a floor 8 decades
//! under the maximum, and `(x + 4) / 4`. Shape 80 × 800, mel-major.
//!
//! The spectrum is computed in f64, as the reference (`pipecat`'s numpy port of the Hugging Face Whisper
//! feature extractor) does; the fixture test compares against numbers that reference produced.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

use crate::SAMPLE_RATE;

/// Samples the model looks at: 8 s at 16 kHz.
pub const WINDOW_SAMPLES: usize = 8 * SAMPLE_RATE as usize;
/// Mel bands per frame.
pub const MEL_BANDS: usize = 80;
/// Frames per window (hop 160 over 8 s; the STFT's last frame is dropped, as in Whisper).
pub const FRAMES: usize = WINDOW_SAMPLES / HOP;

const FFT_SIZE: usize = 400;
const HOP: usize = 160;
const FREQUENCY_BINS: usize = FFT_SIZE / 2 + 1;
const MEL_FLOOR: f64 = 1e-10;
const NORMALIZE_EPSILON: f64 = 1e-7;

/// One triangular mel filter: its weights over the contiguous bins where it is non-zero.
struct MelFilter {
    first_bin: usize,
    weights: Vec<f64>,
}

/// Reusable extractor (the FFT plan, window and filter bank are built once).
pub struct LogMelExtractor {
    fft: Arc<dyn RealToComplex<f64>>,
    window: Vec<f64>,
    filters: Vec<MelFilter>,
    frame: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    scratch: Vec<Complex<f64>>,
    power: Vec<f64>,
}

impl Default for LogMelExtractor {
    fn default() -> Self {
        Self::new()
    }
}

impl LogMelExtractor {
    pub fn new() -> Self {
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(FFT_SIZE);
        // Periodic Hann (torch.hann_window / numpy hanning(N + 1)[:-1]).
        let window = (0..FFT_SIZE)
            .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / FFT_SIZE as f64).cos())
            .collect();
        let spectrum = fft.make_output_vec();
        let scratch = fft.make_scratch_vec();
        Self {
            fft,
            window,
            filters: slaney_mel_filters(),
            frame: vec![0.0; FFT_SIZE],
            spectrum,
            scratch,
            power: vec![0.0; FREQUENCY_BINS * (FRAMES + 1)],
        }
    }

    /// Features of the last 8 s of `audio` (16 kHz mono), `MEL_BANDS × FRAMES` values, band-major
    /// (the model's `[80, 800]` input).
    pub fn extract(&mut self, audio: &[f32]) -> Vec<f32> {
        let window = last_window(audio);
        let normalized = normalize(&window);
        self.power_spectrogram(&normalized);
        let mut log_mel = vec![0.0_f64; MEL_BANDS * FRAMES];
        let mut max = f64::NEG_INFINITY;
        for (band, filter) in self.filters.iter().enumerate() {
            let row = &mut log_mel[band * FRAMES..(band + 1) * FRAMES];
            for (frame, value) in row.iter_mut().enumerate() {
                let bins = &self.power[frame * FREQUENCY_BINS + filter.first_bin..];
                let energy: f64 = filter.weights.iter().zip(bins).map(|(w, p)| w * p).sum();
                *value = energy.max(MEL_FLOOR).log10();
                max = max.max(*value);
            }
        }
        let floor = max - 8.0;
        log_mel
            .iter()
            .map(|&v| ((v.max(floor) + 4.0) / 4.0) as f32)
            .collect()
    }

    /// Power spectrum of every STFT frame (`FRAMES + 1` of them), frame-major, into `self.power`.
    fn power_spectrogram(&mut self, samples: &[f64]) {
        let pad = FFT_SIZE / 2;
        for frame_index in 0..=FRAMES {
            let start = frame_index * HOP;
            for (i, (slot, w)) in self.frame.iter_mut().zip(&self.window).enumerate() {
                *slot = reflected(samples, start + i, pad) * w;
            }
            // The buffers have the lengths the plan asked for, so this cannot fail.
            if self
                .fft
                .process_with_scratch(&mut self.frame, &mut self.spectrum, &mut self.scratch)
                .is_err()
            {
                tracing::error!("log-mel FFT rejected its buffers");
                return;
            }
            let row = &mut self.power[frame_index * FREQUENCY_BINS..][..FREQUENCY_BINS];
            for (p, c) in row.iter_mut().zip(&self.spectrum) {
                *p = c.norm_sqr();
            }
        }
    }
}

/// The last [`WINDOW_SAMPLES`] of `audio`, zero-padded in front when shorter.
fn last_window(audio: &[f32]) -> Vec<f32> {
    let mut window = vec![0.0_f32; WINDOW_SAMPLES];
    let take = audio.len().min(WINDOW_SAMPLES);
    window[WINDOW_SAMPLES - take..].copy_from_slice(&audio[audio.len() - take..]);
    window
}

/// Zero mean, unit variance over the whole (padded) window, so loudness does not matter.
fn normalize(window: &[f32]) -> Vec<f64> {
    let n = window.len() as f64;
    let mean = window.iter().map(|&s| f64::from(s)).sum::<f64>() / n;
    let variance = window
        .iter()
        .map(|&s| (f64::from(s) - mean).powi(2))
        .sum::<f64>()
        / n;
    let scale = 1.0 / (variance + NORMALIZE_EPSILON).sqrt();
    // The reference normalises in f32; rounding here keeps the two within f32 precision.
    window
        .iter()
        .map(|&s| f64::from(((f64::from(s) - mean) * scale) as f32))
        .collect()
}

/// Sample `index` of `samples` padded by `pad` on both sides with numpy's `reflect` mode (the edge sample
/// is not repeated).
fn reflected(samples: &[f64], index: usize, pad: usize) -> f64 {
    let len = samples.len() as isize;
    let mut i = index as isize - pad as isize;
    if i < 0 {
        i = -i;
    }
    if i >= len {
        i = 2 * (len - 1) - i;
    }
    samples[i.clamp(0, len - 1) as usize]
}

fn hertz_to_mel(hertz: f64) -> f64 {
    const MIN_LOG_HERTZ: f64 = 1000.0;
    const MIN_LOG_MEL: f64 = 15.0;
    if hertz >= MIN_LOG_HERTZ {
        MIN_LOG_MEL + (hertz / MIN_LOG_HERTZ).ln() * (27.0 / 6.4_f64.ln())
    } else {
        3.0 * hertz / 200.0
    }
}

fn mel_to_hertz(mel: f64) -> f64 {
    const MIN_LOG_HERTZ: f64 = 1000.0;
    const MIN_LOG_MEL: f64 = 15.0;
    if mel >= MIN_LOG_MEL {
        MIN_LOG_HERTZ * ((6.4_f64.ln() / 27.0) * (mel - MIN_LOG_MEL)).exp()
    } else {
        200.0 * mel / 3.0
    }
}

/// The Slaney-scale, area-normalised triangular filter bank over 0 .. 8 kHz (librosa's `htk=False,
/// norm="slaney"`), stored sparsely.
fn slaney_mel_filters() -> Vec<MelFilter> {
    let nyquist = f64::from(SAMPLE_RATE) / 2.0;
    let (mel_min, mel_max) = (hertz_to_mel(0.0), hertz_to_mel(nyquist));
    let edges: Vec<f64> = (0..MEL_BANDS + 2)
        .map(|i| mel_to_hertz(mel_min + (mel_max - mel_min) * i as f64 / (MEL_BANDS + 1) as f64))
        .collect();
    let bin_hertz =
        |bin: usize| f64::from(SAMPLE_RATE / 2) * bin as f64 / (FREQUENCY_BINS - 1) as f64;
    (0..MEL_BANDS)
        .map(|band| {
            let (low, centre, high) = (edges[band], edges[band + 1], edges[band + 2]);
            let area = 2.0 / (high - low);
            let weight = |bin: usize| {
                let f = bin_hertz(bin);
                let rising = (f - low) / (centre - low);
                let falling = (high - f) / (high - centre);
                rising.min(falling).max(0.0) * area
            };
            let nonzero: Vec<usize> = (0..FREQUENCY_BINS).filter(|&b| weight(b) > 0.0).collect();
            let first_bin = nonzero.first().copied().unwrap_or(0);
            let last_bin = nonzero.last().copied().unwrap_or(0);
            MelFilter {
                first_bin,
                weights: (first_bin..=last_bin).map(weight).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_gives_the_constant_floor_value() {
        let features = LogMelExtractor::new().extract(&[]);
        assert_eq!(features.len(), MEL_BANDS * FRAMES);
        // Zero power → 1e-10 → log10 = -10 everywhere → (-10 + 4) / 4.
        assert!(features.iter().all(|&v| (v - -1.5).abs() < 1e-6));
    }

    #[test]
    fn only_the_last_eight_seconds_count() {
        let tone: Vec<f32> = (0..WINDOW_SAMPLES + 16_000)
            .map(|i| (i as f32 * 0.05).sin() * 0.3)
            .collect();
        let mut extractor = LogMelExtractor::new();
        let long = extractor.extract(&tone);
        let last = extractor.extract(&tone[16_000..]);
        assert_eq!(long, last);
    }

    #[test]
    fn reflect_padding_skips_the_edge_sample() {
        let samples = [0.0, 1.0, 2.0, 3.0];
        let padded: Vec<f64> = (0..8).map(|i| reflected(&samples, i, 2)).collect();
        assert_eq!(padded, [2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0]);
    }

    #[test]
    fn a_tone_lights_up_the_band_that_holds_its_frequency() {
        let hertz = 1000.0_f32;
        let tone: Vec<f32> = (0..WINDOW_SAMPLES)
            .map(|i| (2.0 * std::f32::consts::PI * hertz * i as f32 / 16_000.0).sin())
            .collect();
        let features = LogMelExtractor::new().extract(&tone);
        let band_mean = |band: usize| {
            features[band * FRAMES..(band + 1) * FRAMES]
                .iter()
                .sum::<f32>()
                / FRAMES as f32
        };
        let loudest = (0..MEL_BANDS)
            .max_by(|&a, &b| band_mean(a).total_cmp(&band_mean(b)))
            .unwrap_or(0);
        let filters = slaney_mel_filters();
        let bin = (hertz / 40.0) as usize; // 16 kHz / 400 points = 40 Hz per bin
        let filter = &filters[loudest];
        assert!(
            (filter.first_bin..filter.first_bin + filter.weights.len()).contains(&bin),
            "band {loudest} does not cover {hertz} Hz"
        );
    }
}
