//! Running the echo fixtures (tests/fixtures/echo-*, made by make_echo_fixtures.py): the microphone
//! through the echo canceller (or not) and the real Silero VAD, with the reference fed as playback would.

use std::path::{Path, PathBuf};

use tomo_audio::echo::BlockLevel;
use tomo_audio::{
    EchoCanceller, EchoConfig, EchoOutput, FRAME_SAMPLES, RenderReference, SileroVad,
    VoiceActivity, read_wav_mono,
};

/// A fixture's microphone after the canceller, and per frame what the canceller kept of it (dB).
pub struct Cleaned {
    pub samples: Vec<f32>,
    pub kept_db: Vec<f32>,
}

pub fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The microphone of `case` (16 kHz), cleaned with the shared reference when `aec` says which output; the playback side runs
/// 100 ms ahead of the capture, in blocks of 256 samples, as the rodio tap feeds it.
pub fn cleaned_mic(case: &str, aec: Option<EchoOutput>) -> Cleaned {
    let mic = read_wav_mono(&fixture(case).join("mic.wav")).unwrap();
    assert_eq!(mic.sample_rate, 16_000);
    let Some(output) = aec else {
        let kept_db = vec![0.0; mic.samples.len() / FRAME_SAMPLES];
        return Cleaned {
            samples: mic.samples,
            kept_db,
        };
    };
    let played = read_wav_mono(&fixture("echo-answers").join("ref.wav")).unwrap();
    let reference = RenderReference::new();
    let config = EchoConfig {
        output,
        ..EchoConfig::default()
    };
    let mut canceller = EchoCanceller::new(reference.clone(), &config);
    let ratio = 16_000.0 / f64::from(played.sample_rate);
    let mut blocks = played.samples.chunks(256).enumerate().peekable();
    let mut out = Vec::with_capacity(mic.samples.len());
    let mut levels = Vec::new();
    for (k, frame) in mic.samples.chunks_exact(FRAME_SAMPLES).enumerate() {
        let index = (k * FRAME_SAMPLES) as i64;
        while let Some((b, block)) = blocks.peek() {
            let at = ((b * 256) as f64 * ratio).round() as i64;
            if at > index + 1_600 {
                break;
            }
            reference.push_at(block, played.sample_rate, at);
            blocks.next();
        }
        out.extend(canceller.process_at(frame, index));
        canceller.take_levels(&mut levels);
        if k % 400 == 399 && std::env::var_os("ECHO_TRACE").is_some() {
            let (erl, erle, delay) = canceller.metrics();
            eprintln!(
                "  {case} {:5.1} s: ERL {erl:5.1} dB, ERLE {erle:5.1} dB, delay {delay} ms",
                index as f64 / 16_000.0
            );
        }
    }
    let blocks = FRAME_SAMPLES / tomo_audio::echo::CHUNK;
    let kept_db = levels.chunks(blocks).map(BlockLevel::kept_db).collect();
    Cleaned {
        samples: out,
        kept_db,
    }
}

/// Silero's speech probability for every 512-sample frame.
pub fn probabilities(samples: &[f32], vad: &mut SileroVad) -> Vec<f32> {
    vad.reset();
    samples
        .chunks_exact(FRAME_SAMPLES)
        .map(|frame| vad.speech_probability(frame).unwrap())
        .collect()
}

/// Replays precomputed probabilities as a VAD.
pub struct Replay(pub Vec<f32>, pub usize);

impl VoiceActivity for Replay {
    fn speech_probability(&mut self, _frame: &[f32]) -> Result<f32, tomo_audio::VadError> {
        let p = self.0.get(self.1).copied().unwrap_or(0.0);
        self.1 += 1;
        Ok(p)
    }
    fn reset(&mut self) {}
}
