//! Mono sample-rate conversion, done once at the edge (capture, WAV input, WAV output) so everything
//! downstream works at one known rate.

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Indexing, Resampler};

/// Input frames per FFT call: large enough to be cheap, small enough (~20-60 ms) not to delay capture.
const CHUNK: usize = 1024;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResampleError {
    #[error("cannot resample {from} Hz to {to} Hz: {message}")]
    Setup { from: u32, to: u32, message: String },
    #[error("resampling {from} Hz to {to} Hz failed: {message}")]
    Process { from: u32, to: u32, message: String },
}

/// A streaming mono resampler: push any number of samples, get the converted ones back.
///
/// The FFT resampler's start-up delay is trimmed, so output sample `n` lines up with input time
/// `n / to`; [`StreamResampler::finish`] returns the tail still held inside.
pub struct StreamResampler {
    from: u32,
    to: u32,
    inner: Option<Fft<f32>>,
    pending: Vec<f32>,
    /// Output samples still to drop (the resampler's delay).
    to_trim: usize,
    /// Input samples taken so far, to know how many output samples the whole stream should have.
    consumed: u64,
    produced: u64,
    scratch: Vec<f32>,
}

impl StreamResampler {
    pub fn new(from: u32, to: u32) -> Result<Self, ResampleError> {
        Self::with_chunk(from, to, CHUNK)
    }

    /// With `chunk` input frames per FFT call: a smaller one holds less back (what has been pushed
    /// comes out sooner) at a little more CPU.
    pub fn with_chunk(from: u32, to: u32, chunk: usize) -> Result<Self, ResampleError> {
        if from == 0 || to == 0 {
            return Err(ResampleError::Setup {
                from,
                to,
                message: "sample rate must be positive".into(),
            });
        }
        let inner = if from == to {
            None
        } else {
            let fft = Fft::<f32>::new(
                from as usize,
                to as usize,
                chunk.max(1),
                1,
                FixedSync::Input,
            )
            .map_err(|e| ResampleError::Setup {
                from,
                to,
                message: e.to_string(),
            })?;
            Some(fft)
        };
        let to_trim = inner.as_ref().map_or(0, Resampler::output_delay);
        let scratch_len = inner.as_ref().map_or(0, Resampler::output_frames_max);
        Ok(Self {
            from,
            to,
            inner,
            pending: Vec::new(),
            to_trim,
            consumed: 0,
            produced: 0,
            scratch: vec![0.0; scratch_len],
        })
    }

    pub fn input_rate(&self) -> u32 {
        self.from
    }

    /// Converts `input` and returns whatever output is ready (possibly nothing).
    pub fn push(&mut self, input: &[f32]) -> Result<Vec<f32>, ResampleError> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(input.to_vec());
        };
        self.pending.extend_from_slice(input);
        let mut out = Vec::new();
        let mut offset = 0;
        while self.pending.len() - offset >= inner.input_frames_next() {
            let need = inner.input_frames_next();
            let chunk = &self.pending[offset..offset + need];
            let written = run_chunk(inner, chunk, None, &mut self.scratch, self.from, self.to)?;
            offset += need;
            self.consumed += need as u64;
            emit(
                &self.scratch,
                written,
                &mut self.to_trim,
                &mut self.produced,
                &mut out,
            );
        }
        self.pending.drain(..offset);
        Ok(out)
    }

    /// Flushes the samples still buffered (end of stream) and resets for reuse.
    pub fn finish(&mut self) -> Result<Vec<f32>, ResampleError> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        self.consumed += self.pending.len() as u64;
        let expected =
            (self.consumed as f64 * f64::from(self.to) / f64::from(self.from)).ceil() as u64;
        let need = inner.input_frames_next();
        let mut chunk = std::mem::take(&mut self.pending);
        let mut partial = chunk.len();
        chunk.resize(need, 0.0);
        // Pump (silence after the real tail) until every expected output sample came out of the delay.
        while self.produced < expected {
            let written = run_chunk(
                inner,
                &chunk,
                Some(partial),
                &mut self.scratch,
                self.from,
                self.to,
            )?;
            if written == 0 {
                break;
            }
            partial = 0;
            emit(
                &self.scratch,
                written,
                &mut self.to_trim,
                &mut self.produced,
                &mut out,
            );
        }
        let excess = (self.produced.saturating_sub(expected)) as usize;
        out.truncate(out.len().saturating_sub(excess));
        inner.reset();
        self.to_trim = inner.output_delay();
        self.consumed = 0;
        self.produced = 0;
        Ok(out)
    }
}

/// Appends the newly written output, minus what is left of the start-up delay.
fn emit(
    scratch: &[f32],
    written: usize,
    to_trim: &mut usize,
    produced: &mut u64,
    out: &mut Vec<f32>,
) {
    let trim = (*to_trim).min(written);
    *to_trim -= trim;
    out.extend_from_slice(&scratch[trim..written]);
    *produced += (written - trim) as u64;
}

fn run_chunk(
    inner: &mut Fft<f32>,
    chunk: &[f32],
    partial: Option<usize>,
    scratch: &mut [f32],
    from: u32,
    to: u32,
) -> Result<usize, ResampleError> {
    let failed = |message: String| ResampleError::Process { from, to, message };
    let input = InterleavedSlice::new(chunk, 1, chunk.len()).map_err(|e| failed(e.to_string()))?;
    let frames = scratch.len();
    let mut output =
        InterleavedSlice::new_mut(scratch, 1, frames).map_err(|e| failed(e.to_string()))?;
    let indexing = partial.map(|len| Indexing::new().partial_len(len));
    let (_, written) = inner
        .process_into_buffer(&input, &mut output, indexing.as_ref())
        .map_err(|e| failed(e.to_string()))?;
    Ok(written)
}

/// Resamples a whole clip (no-op when the rates match).
pub fn resample(samples: &[f32], from: u32, to: u32) -> Result<Vec<f32>, ResampleError> {
    let mut resampler = StreamResampler::new(from, to)?;
    let mut out = resampler.push(samples)?;
    out.extend(resampler.finish()?);
    Ok(out)
}

/// Averages interleaved channels into mono.
pub fn downmix(interleaved: &[f32], channels: usize) -> Vec<f32> {
    if channels <= 1 {
        return interleaved.to_vec();
    }
    let scale = 1.0 / channels as f32;
    interleaved
        .chunks_exact(channels)
        .map(|frame| frame.iter().sum::<f32>() * scale)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(freq: f32, rate: u32, secs: f32) -> Vec<f32> {
        let n = (rate as f32 * secs) as usize;
        (0..n)
            .map(|i| (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin() * 0.5)
            .collect()
    }

    /// Zero crossings per second ≈ 2 × frequency: checks pitch survives and timing lines up.
    fn crossings(samples: &[f32]) -> usize {
        samples
            .windows(2)
            .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
            .count()
    }

    #[test]
    fn length_and_pitch_are_kept_for_common_rates() {
        for rate in [8000, 22050, 24000, 44100, 48000] {
            let input = tone(440.0, rate, 1.0);
            let out = resample(&input, rate, 16000).unwrap();
            assert_eq!(out.len(), 16000, "length for {rate} Hz");
            let c = crossings(&out[1000..15000]) as f32 / (14000.0 / 16000.0);
            assert!((c - 880.0).abs() < 10.0, "{rate} Hz: {c} crossings/s");
        }
    }

    #[test]
    fn streaming_in_small_pieces_matches_one_shot() {
        let input = tone(300.0, 48000, 0.7);
        let whole = resample(&input, 48000, 16000).unwrap();
        let mut r = StreamResampler::new(48000, 16000).unwrap();
        let mut pieces = Vec::new();
        for part in input.chunks(480) {
            pieces.extend(r.push(part).unwrap());
        }
        pieces.extend(r.finish().unwrap());
        assert_eq!(pieces.len(), whole.len());
        for (a, b) in pieces.iter().zip(&whole) {
            assert!((a - b).abs() < 1e-5);
        }
    }

    #[test]
    fn downmix_averages_channels() {
        assert_eq!(downmix(&[1.0, 0.0, 0.5, 0.5], 2), vec![0.5, 0.5]);
        assert_eq!(downmix(&[0.1, 0.2], 1), vec![0.1, 0.2]);
    }

    #[test]
    fn zero_rate_is_an_error() {
        assert!(StreamResampler::new(0, 16000).is_err());
    }
}
