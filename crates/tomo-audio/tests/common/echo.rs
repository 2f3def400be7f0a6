//! Running the echo fixtures (tests/fixtures/echo-*, made by make_echo_fixtures.py): the microphone
//! through the echo canceller (or not) and the real Silero VAD, with the reference fed as playback would.

use std::path::{Path, PathBuf};

use tomo_audio::echo::cancel_recorded;
use tomo_audio::{
    EchoConfig, EchoOutput, FRAME_SAMPLES, FrameEcho, SileroVad, VoiceActivity, read_wav_mono,
};

pub use tomo_audio::echo::CleanedRecording as Cleaned;

pub fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The microphone of `case` (16 kHz), cleaned of the answers played (`echo-answers/ref.wav`) when `aec`
/// says which output, as the live path would.
pub fn cleaned_mic(case: &str, aec: Option<EchoOutput>) -> Cleaned {
    let mic = read_wav_mono(&fixture(case).join("mic.wav")).unwrap();
    assert_eq!(mic.sample_rate, 16_000);
    let Some(output) = aec else {
        let echo = vec![FrameEcho::default(); mic.samples.len() / FRAME_SAMPLES];
        return Cleaned {
            voice: mic.samples.clone(),
            samples: mic.samples,
            echo,
        };
    };
    let played = read_wav_mono(&fixture("echo-answers").join("ref.wav")).unwrap();
    let config = EchoConfig {
        output,
        ..EchoConfig::default()
    };
    cancel_recorded(&mic.samples, &played, &config)
}

/// The microphone recording of `case` (16 kHz samples).
pub fn fixture_mic(case: &str) -> Vec<f32> {
    read_wav_mono(&fixture(case).join("mic.wav"))
        .unwrap()
        .samples
}

/// Sum of squares.
pub fn energy(x: &[f32]) -> f64 {
    x.iter().map(|s| f64::from(s * s)).sum()
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
