//! WAV files in: decode any PCM/float WAV to 16 kHz mono and cut it into speech segments.

use std::path::{Path, PathBuf};

use crate::resample::{downmix, resample};
use crate::segmenter::{Segmenter, SegmenterConfig, SegmenterEvent, SpeechSegment};
use crate::vad::{VadError, VoiceActivity};
use crate::{Audio, FRAME_SAMPLES, SAMPLE_RATE};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WavError {
    #[error("cannot open {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("{path} is not a valid WAV file: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("{path} uses an unsupported WAV format: {message}")]
    Unsupported { path: PathBuf, message: String },
    #[error("cannot resample {path}: {message}")]
    Resample { path: PathBuf, message: String },
    #[error("voice activity detection failed on {path}: {source}")]
    Vad { path: PathBuf, source: VadError },
}

/// Sample rates a WAV file may have: telephone (8 kHz) to studio (192 kHz).
pub const SUPPORTED_RATES: std::ops::RangeInclusive<u32> = 8_000..=192_000;

fn classify(path: &Path, error: hound::Error) -> WavError {
    let path = path.to_path_buf();
    match error {
        hound::Error::IoError(e) => WavError::Corrupt {
            path,
            message: format!("file ends early or cannot be read ({e})"),
        },
        hound::Error::Unsupported => WavError::Unsupported {
            path,
            message: "only integer PCM (8-32 bit) and 32-bit float are supported".into(),
        },
        other @ (hound::Error::FormatError(_)
        | hound::Error::TooWide
        | hound::Error::UnfinishedSample
        | hound::Error::InvalidSampleFormat) => WavError::Corrupt {
            path,
            message: other.to_string(),
        },
    }
}

/// Decodes a WAV file (integer PCM 8/16/24/32 bit or 32-bit float, any rate and channel count) into
/// mono at its own sample rate.
pub fn read_wav_mono(path: &Path) -> Result<Audio, WavError> {
    // Opened here so that only failing to open is an `Open` error; read errors inside mean a bad file.
    let file = std::fs::File::open(path).map_err(|e| WavError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut reader =
        hound::WavReader::new(std::io::BufReader::new(file)).map_err(|e| classify(path, e))?;
    let spec = reader.spec();
    if spec.channels == 0 || spec.sample_rate == 0 {
        return Err(WavError::Corrupt {
            path: path.to_path_buf(),
            message: format!("{} channels at {} Hz", spec.channels, spec.sample_rate),
        });
    }
    // The resampler sizes its buffers from the ratio: a header claiming 4 GHz would have it allocate
    // gigabytes before reading a sample.
    if !SUPPORTED_RATES.contains(&spec.sample_rate) {
        return Err(WavError::Unsupported {
            path: path.to_path_buf(),
            message: format!(
                "a sample rate of {} Hz (supported: {} to {} Hz)",
                spec.sample_rate,
                SUPPORTED_RATES.start(),
                SUPPORTED_RATES.end()
            ),
        });
    }
    let interleaved: Vec<f32> = match (spec.sample_format, spec.bits_per_sample) {
        (hound::SampleFormat::Float, 32) => reader
            .samples::<f32>()
            .collect::<Result<_, _>>()
            .map_err(|e| classify(path, e))?,
        (hound::SampleFormat::Int, bits @ 1..=32) => {
            let scale = 1.0 / (1_u64 << (bits - 1)) as f32;
            reader
                .samples::<i32>()
                .map(|s| s.map(|v| v as f32 * scale))
                .collect::<Result<_, _>>()
                .map_err(|e| classify(path, e))?
        }
        (format, bits) => {
            return Err(WavError::Unsupported {
                path: path.to_path_buf(),
                message: format!("{bits}-bit {format:?} samples"),
            });
        }
    };
    Ok(Audio::new(
        downmix(&interleaved, usize::from(spec.channels)),
        spec.sample_rate,
    ))
}

/// Decodes a WAV file to 16 kHz mono (the rate the VAD and ASR expect).
pub fn read_wav_16k(path: &Path) -> Result<Vec<f32>, WavError> {
    let audio = read_wav_mono(path)?;
    resample(&audio.samples, audio.sample_rate, SAMPLE_RATE).map_err(|e| WavError::Resample {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Runs `vad` and a hands-free [`Segmenter`] over a WAV file and returns its speech segments.
pub fn segments_from_wav(
    path: &Path,
    vad: &mut dyn VoiceActivity,
    config: &SegmenterConfig,
) -> Result<Vec<SpeechSegment>, WavError> {
    let samples = read_wav_16k(path)?;
    vad.reset();
    let mut segmenter = Segmenter::new(vad, config);
    let mut segments = Vec::new();
    let mut keep = |events: Vec<SegmenterEvent>| {
        for event in events {
            if let SegmenterEvent::Segment(segment) = event {
                segments.push(segment);
            }
        }
    };
    let mut frame = vec![0.0_f32; FRAME_SAMPLES];
    for chunk in samples.chunks(FRAME_SAMPLES) {
        // The last frame is padded with silence: the VAD only takes whole windows.
        frame[..chunk.len()].copy_from_slice(chunk);
        frame[chunk.len()..].fill(0.0);
        let events = segmenter.push(&frame).map_err(|source| WavError::Vad {
            path: path.to_path_buf(),
            source,
        })?;
        keep(events);
    }
    keep(segmenter.flush());
    Ok(segments)
}
