//! Voices that need no model download (Debian's `flite` and `espeak-ng`) and [`FallbackTts`], which keeps
//! Tomo talking when the configured voice cannot.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tomo_audio::Audio;

use super::piper::check_speed;
use super::{TextToSpeech, TtsError, cli};

/// espeak-ng's default rate in words per minute, which `speed` 1.0 maps to.
const ESPEAK_WPM: f32 = 175.0;
/// espeak-ng accepts 80..=450 wpm (`-s`); outside that it clamps or misbehaves.
const ESPEAK_WPM_RANGE: (f32, f32) = (80.0, 450.0);

fn scratch_dir() -> Result<tempfile::TempDir, TtsError> {
    tempfile::Builder::new()
        .prefix("tomo-tts-")
        .tempdir()
        .map_err(|e| TtsError::Failed(format!("cannot create a temporary directory: {e}")))
}

fn utf8(path: &Path) -> Result<&str, TtsError> {
    path.to_str()
        .ok_or_else(|| TtsError::Failed(format!("path is not UTF-8: {}", path.display())))
}

/// CMU Flite (`flite -voice slt`): intelligible, English only, fast.
#[derive(Debug, Clone)]
pub struct FliteTts {
    binary: PathBuf,
    voice: String,
    speed: f32,
}

impl FliteTts {
    /// `voice`: a built-in voice (`slt`, `awb`, `rms`, `kal`, ...) or a `.flitevox` file.
    pub fn new(voice: &str, speed: f32) -> Result<Self, TtsError> {
        Self::with_binary("flite", voice, speed)
    }

    /// Like [`FliteTts::new`] with an explicit `flite` executable.
    pub fn with_binary(
        binary: impl Into<PathBuf>,
        voice: &str,
        speed: f32,
    ) -> Result<Self, TtsError> {
        check_speed(speed)?;
        let binary = binary.into();
        let listed = cli::run(&binary, "flite", &["-lv"], None)?;
        let voices = String::from_utf8_lossy(&listed.stdout);
        let built_in = voices
            .split_once(':')
            .is_some_and(|(_, names)| names.split_whitespace().any(|n| n == voice));
        // flite silently uses its default voice for an unknown name, so check here.
        if !built_in && !Path::new(voice).is_file() {
            return Err(TtsError::VoiceMissing(format!(
                "flite voice `{voice}` (built in: {})",
                voices.split_once(':').map_or("none", |(_, n)| n.trim())
            )));
        }
        Ok(Self {
            binary,
            voice: voice.to_owned(),
            speed,
        })
    }
}

impl TextToSpeech for FliteTts {
    fn name(&self) -> &str {
        "flite"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        if !text.chars().any(char::is_alphanumeric) {
            return Ok(Audio::new(Vec::new(), 16_000));
        }
        let dir = scratch_dir()?;
        // The text goes through a file rather than `-t`: no argument-length limit, and text starting with
        // `-` cannot be mistaken for an option.
        let input = dir.path().join("in.txt");
        std::fs::write(&input, text)
            .map_err(|e| TtsError::Failed(format!("cannot write {}: {e}", input.display())))?;
        let output = dir.path().join("out.wav");
        let stretch = format!("duration_stretch={}", 1.0 / self.speed);
        cli::run(
            &self.binary,
            "flite",
            &[
                "-voice",
                &self.voice,
                "--setf",
                &stretch,
                "-f",
                utf8(&input)?,
                "-o",
                utf8(&output)?,
            ],
            None,
        )?;
        cli::read_wav_file(&output)
    }
}

/// eSpeak NG: robotic but covers about a hundred languages (`-v cmn` for Mandarin).
#[derive(Debug, Clone)]
pub struct EspeakTts {
    binary: PathBuf,
    voice: String,
    speed: f32,
}

impl EspeakTts {
    /// `voice`: an espeak-ng voice name (`en-us`, `de`, `cmn`, ...).
    pub fn new(voice: &str, speed: f32) -> Result<Self, TtsError> {
        Self::with_binary("espeak-ng", voice, speed)
    }

    /// Like [`EspeakTts::new`] with an explicit `espeak-ng` executable.
    pub fn with_binary(
        binary: impl Into<PathBuf>,
        voice: &str,
        speed: f32,
    ) -> Result<Self, TtsError> {
        check_speed(speed)?;
        let binary = binary.into();
        // Validates the binary and the voice in one run.
        super::phonemes::Espeak::with_binary(binary.clone(), voice)?;
        Ok(Self {
            binary,
            voice: voice.to_owned(),
            speed,
        })
    }

    fn words_per_minute(&self) -> u32 {
        let (min, max) = ESPEAK_WPM_RANGE;
        (ESPEAK_WPM * self.speed).clamp(min, max).round() as u32
    }
}

impl TextToSpeech for EspeakTts {
    fn name(&self) -> &str {
        "espeak"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        if !text.chars().any(char::is_alphanumeric) {
            return Ok(Audio::new(Vec::new(), 22_050));
        }
        let dir = scratch_dir()?;
        let output = dir.path().join("out.wav");
        let wpm = self.words_per_minute().to_string();
        // Text on stdin: no length limit and no option parsing of text that starts with `-`.
        cli::run(
            &self.binary,
            "espeak-ng",
            &["-v", &self.voice, "-s", &wpm, "-w", utf8(&output)?],
            Some(text),
        )?;
        cli::read_wav_file(&output)
    }
}

/// Speaks with `primary` and, when it is unavailable or fails, with `fallback`.
pub struct FallbackTts {
    primary: Option<Box<dyn TextToSpeech>>,
    fallback: Box<dyn TextToSpeech>,
    /// Synthesis failures are warned about once, then logged at debug level: a broken voice would otherwise
    /// warn on every sentence.
    warned: AtomicBool,
}

impl FallbackTts {
    /// `primary` is the result of building the preferred engine; if that failed, the reason is logged and
    /// every sentence goes to `fallback`.
    pub fn new(
        primary: Result<Box<dyn TextToSpeech>, TtsError>,
        fallback: Box<dyn TextToSpeech>,
    ) -> Self {
        let primary = match primary {
            Ok(engine) => Some(engine),
            Err(reason) => {
                tracing::warn!(fallback = fallback.name(), %reason, "voice unavailable, using the fallback voice");
                None
            }
        };
        Self {
            primary,
            fallback,
            warned: AtomicBool::new(false),
        }
    }

    /// Whether the primary engine could not be built, so every sentence uses the fallback.
    pub fn is_degraded(&self) -> bool {
        self.primary.is_none()
    }
}

impl TextToSpeech for FallbackTts {
    /// The engine that speaks: the primary's name, or the fallback's when the primary could not be built.
    fn name(&self) -> &str {
        self.primary
            .as_ref()
            .map_or_else(|| self.fallback.name(), |p| p.name())
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        let Some(primary) = &self.primary else {
            return self.fallback.synthesize(text);
        };
        match primary.synthesize(text) {
            Ok(audio) => Ok(audio),
            Err(reason) => {
                if self.warned.swap(true, Ordering::Relaxed) {
                    tracing::debug!(primary = primary.name(), %reason, "voice failed, using the fallback voice");
                } else {
                    tracing::warn!(primary = primary.name(), fallback = self.fallback.name(), %reason,
                        "voice failed, using the fallback voice (further failures are logged at debug level)");
                }
                self.fallback.synthesize(text)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn espeak_rate_follows_speed_within_its_range() {
        let rate = |speed| EspeakTts::new("en-us", speed).unwrap().words_per_minute();
        assert_eq!(rate(1.0), 175);
        assert_eq!(rate(2.0), 350);
        assert_eq!(rate(0.1), 80);
        assert_eq!(rate(10.0), 450);
    }

    #[test]
    fn unknown_flite_voice_is_voice_missing() {
        let err = FliteTts::new("no-such-voice", 1.0).unwrap_err();
        assert!(matches!(err, TtsError::VoiceMissing(_)), "{err:?}");
        assert!(
            err.to_string().contains("slt"),
            "lists the built-in voices: {err}"
        );
    }

    #[test]
    fn bad_speed_is_rejected() {
        assert!(matches!(
            FliteTts::new("slt", 0.0),
            Err(TtsError::InvalidSpeed(_))
        ));
        assert!(matches!(
            EspeakTts::new("en-us", f32::NAN),
            Err(TtsError::InvalidSpeed(_))
        ));
    }
}
