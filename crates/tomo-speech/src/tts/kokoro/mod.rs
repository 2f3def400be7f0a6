//! Kokoro-82M v1.0: one multilingual model (int8 ONNX), a style vector per voice, 24 kHz output.
//!
//! Text becomes Kokoro phonemes through the front end of the voice's language (the first letter of its
//! name: `a` American and `b` British English, `z` Mandarin, `j` Japanese), phonemes become token ids
//! (`vocab.json`), and each piece of at most 510 tokens is one model run with the voice's style vector for
//! that length. Unlike Piper, Kokoro samples no noise: the same text always gives the same audio.

pub mod assets;
pub mod english;
mod japanese;
pub mod mandarin;
mod mandarin_words;
pub mod pinyin_ipa;
pub mod zh_numbers;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tomo_audio::Audio;
use tomo_onnx::ort::session::Session;
use tomo_onnx::ort::value::Tensor;

pub use assets::{KokoroPaths, MAX_TOKENS, Vocab, VoiceStyle};
use english::EnglishFrontend;
use japanese::JapaneseFrontend;
use mandarin::MandarinFrontend;

use super::piper::check_speed;
use super::{TextToSpeech, TtsError, text, trim};

pub const SAMPLE_RATE: u32 = 24_000;

/// Silence kept after the last sound of a piece (the model pads generously; the lead is cut by
/// [`trim::trim_lead`]).
const KEEP_AFTER_S: f32 = 0.15;
/// Phonemes of the run made at load ("hello"), in every language's vocabulary.
const WARM_UP: &str = "həlˈO.";

/// The language a voice speaks, from the first letter of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    AmericanEnglish,
    BritishEnglish,
    Mandarin,
    Japanese,
}

impl Language {
    pub fn of_voice(voice: &str) -> Option<Self> {
        Some(match voice.chars().next()? {
            'a' => Self::AmericanEnglish,
            'b' => Self::BritishEnglish,
            'z' => Self::Mandarin,
            'j' => Self::Japanese,
            _ => return None,
        })
    }
}

/// Text → phonemes for one language. English text may carry Hanzi and Mandarin text Latin words: each
/// front end hands the other script to the other reader.
#[derive(Debug)]
enum Frontend {
    English(EnglishFrontend),
    Mandarin(MandarinFrontend),
    Japanese(JapaneseFrontend),
}

impl Frontend {
    fn new(language: Language) -> Result<Self, TtsError> {
        Ok(match language {
            Language::AmericanEnglish => Self::English(EnglishFrontend::new(false)?),
            Language::BritishEnglish => Self::English(EnglishFrontend::new(true)?),
            Language::Mandarin => Self::Mandarin(MandarinFrontend::new()),
            Language::Japanese => Self::Japanese(JapaneseFrontend::new()?),
        })
    }

    fn phonemize(&self, text: &str) -> Result<String, TtsError> {
        match self {
            Self::English(english) => english_with_hanzi(english, text),
            Self::Mandarin(mandarin) => mandarin.phonemize(text),
            Self::Japanese(japanese) => japanese.phonemize(text),
        }
    }
}

/// English text with any Hanzi runs read as Mandarin (better than espeak-ng's "Chinese letter").
fn english_with_hanzi(english: &EnglishFrontend, text: &str) -> Result<String, TtsError> {
    if !text.chars().any(mandarin::is_han) {
        return english.phonemize(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let han = mandarin::is_han(chars[start]);
        let end = chars[start..]
            .iter()
            .position(|c| mandarin::is_han(*c) != han)
            .map_or(chars.len(), |n| start + n);
        let piece = if han {
            mandarin::han_to_ipa(&chars[start..end])
        } else {
            english.phonemize(&chars[start..end].iter().collect::<String>())?
        };
        if !piece.is_empty() {
            pieces.push(piece);
        }
        start = end;
    }
    Ok(pieces.join(" "))
}

/// A Kokoro voice.
pub struct KokoroTts {
    // ort 2.0.0-rc.15's `Session::run` takes `&mut self`.
    session: Mutex<Session>,
    vocab: Vocab,
    style: VoiceStyle,
    frontend: Frontend,
    voice: String,
    speed: f32,
    model: PathBuf,
}

impl std::fmt::Debug for KokoroTts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KokoroTts")
            .field("voice", &self.voice)
            .field("speed", &self.speed)
            .finish_non_exhaustive()
    }
}

/// Threads of one model run: every core up to 4 (`TOMO_KOKORO_THREADS` overrides). On the 2-core dev
/// machine two threads took "Of course!" from 697 to 444 ms and a 5.7 s sentence from 3.2 to 1.9 s; so
/// that a synthesis never stalls playback (one thread is about real time) both cores are used. Spinning is
/// off: it saved at most 5 % per run and would burn the cores ASR shares while waiting for the next one.
/// (Graph optimization levels and memory patterns changed nothing measurable: most of a run is the int8
/// vocoder's `ConvInteger`, which scales with the audio, silence padding included.)
fn default_threads() -> usize {
    std::env::var("TOMO_KOKORO_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(4)))
}

impl KokoroTts {
    /// Loads the model and `voice` (a name such as `af_heart`, a file in `paths.voices`), using ONNX
    /// Runtime from `runtime`. An unknown voice is an error that lists the installed ones.
    pub fn new(
        paths: &KokoroPaths,
        voice: &str,
        runtime: &Path,
        speed: f32,
    ) -> Result<Self, TtsError> {
        check_speed(speed)?;
        let voice = voice.trim();
        let voice_file = paths.voice(voice);
        let plain_name = !voice.is_empty() && !voice.contains(['/', '\\', '.']);
        if !plain_name || !voice_file.is_file() {
            return Err(TtsError::UnknownVoice {
                engine: "kokoro".into(),
                voice: voice.to_owned(),
                installed: paths.installed_voices(),
            });
        }
        let language = Language::of_voice(voice).ok_or_else(|| TtsError::VoiceLoad {
            path: voice_file.display().to_string(),
            message: format!(
                "no text front end for the language of `{voice}` (Tomo reads a*/b* English, z* Mandarin, j* Japanese)"
            ),
        })?;
        if !paths.model.is_file() {
            return Err(TtsError::VoiceMissing(paths.model.display().to_string()));
        }
        let vocab = Vocab::load(&paths.vocab)?;
        let style = VoiceStyle::load(&voice_file)?;
        let frontend = Frontend::new(language)?;
        let environment = tomo_onnx::environment(runtime)?;
        let load_error = |message: String| TtsError::VoiceLoad {
            path: paths.model.display().to_string(),
            message,
        };
        let threads = default_threads();
        let session =
            tomo_onnx::session(&environment, &paths.model, threads).map_err(load_error)?;
        let input_names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for required in ["tokens", "style", "speed"] {
            if !input_names.contains(&required) {
                return Err(load_error(format!(
                    "not a Kokoro model: no `{required}` input (inputs: {input_names:?})"
                )));
            }
        }
        let tts = Self {
            session: Mutex::new(session),
            vocab,
            style,
            frontend,
            voice: voice.to_owned(),
            speed,
            model: paths.model.clone(),
        };
        // ONNX Runtime's first run of a session is several times slower than the next (it sizes its buffers
        // then); pay it here, at load, rather than in the first sentence the user waits for.
        let warm = std::time::Instant::now();
        if let Err(error) = tts.synthesize_phonemes(WARM_UP) {
            tracing::warn!(%error, "Kokoro warm-up run failed");
        }
        tracing::info!(
            model = %paths.model.display(),
            voice,
            threads,
            warm_up_ms = warm.elapsed().as_millis() as u64,
            "Kokoro voice loaded"
        );
        Ok(tts)
    }

    pub fn voice(&self) -> &str {
        &self.voice
    }

    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// The phonemes the model will read for `text`, one string per model run (each ≤ [`MAX_TOKENS`]).
    pub fn phonemize(&self, text: &str) -> Result<Vec<String>, TtsError> {
        let phonemes = self.frontend.phonemize(text)?;
        if !phonemes.chars().any(|c| c.is_alphabetic()) {
            return Ok(Vec::new());
        }
        // Characters, not tokens, are counted: a phoneme outside the vocabulary makes a piece shorter.
        Ok(if phonemes.chars().count() <= MAX_TOKENS {
            vec![phonemes]
        } else {
            text::chunks(&phonemes, MAX_TOKENS)
        })
    }

    /// Speaks one phoneme string (at most [`MAX_TOKENS`] tokens; longer input is cut there). Phonemes the
    /// vocabulary does not know are skipped with a warning.
    pub fn synthesize_phonemes(&self, phonemes: &str) -> Result<Audio, TtsError> {
        let mut tokens = self.vocab.tokens(phonemes);
        if !tokens.skipped.is_empty() {
            tracing::warn!(
                voice = %self.voice,
                skipped = %tokens.skipped.iter().collect::<String>(),
                "phonemes missing from Kokoro's vocabulary were skipped"
            );
        }
        if tokens.ids.is_empty() {
            return Ok(Audio::new(Vec::new(), SAMPLE_RATE));
        }
        tokens.ids.truncate(MAX_TOKENS);
        let mut samples = self.run(&tokens.ids)?;
        trim::trim_lead(&mut samples, SAMPLE_RATE);
        trim::trim_tail(&mut samples, SAMPLE_RATE, KEEP_AFTER_S);
        Ok(Audio::new(samples, SAMPLE_RATE))
    }

    fn run(&self, ids: &[i64]) -> Result<Vec<f32>, TtsError> {
        let failed = |e: tomo_onnx::ort::Error| {
            TtsError::Failed(format!("Kokoro model {}: {e}", self.model.display()))
        };
        let mut padded = Vec::with_capacity(ids.len() + 2);
        padded.push(0);
        padded.extend_from_slice(ids);
        padded.push(0);
        let count = padded.len();
        let tokens = Tensor::from_array(([1, count], padded)).map_err(failed)?;
        let style = self.style.for_length(ids.len()).to_vec();
        let style = Tensor::from_array(([1, assets::STYLE_DIM], style)).map_err(failed)?;
        let speed = Tensor::from_array(([1], vec![self.speed])).map_err(failed)?;
        let inputs = tomo_onnx::ort::inputs![
            "tokens" => tokens,
            "style" => style,
            "speed" => speed,
        ];
        let mut session = self
            .session
            .lock()
            .map_err(|_| TtsError::Failed("Kokoro session poisoned by an earlier panic".into()))?;
        let outputs = session.run(inputs).map_err(failed)?;
        let (_, audio) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        Ok(audio.iter().map(|s| s.clamp(-1.0, 1.0)).collect())
    }
}

impl TextToSpeech for KokoroTts {
    fn name(&self) -> &str {
        "kokoro"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        let mut audio = Audio::new(Vec::new(), SAMPLE_RATE);
        for piece in self.phonemize(text)? {
            tracing::debug!(phonemes = %piece, "Kokoro piece");
            audio
                .samples
                .extend(self.synthesize_phonemes(&piece)?.samples);
        }
        Ok(audio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_come_from_the_voice_name() {
        assert_eq!(
            Language::of_voice("af_heart"),
            Some(Language::AmericanEnglish)
        );
        assert_eq!(
            Language::of_voice("bm_george"),
            Some(Language::BritishEnglish)
        );
        assert_eq!(Language::of_voice("zf_xiaoxiao"), Some(Language::Mandarin));
        assert_eq!(Language::of_voice("jf_alpha"), Some(Language::Japanese));
        assert_eq!(Language::of_voice("ef_dora"), None);
    }

    #[test]
    fn hanzi_in_english_text_is_read_as_mandarin() {
        let english = EnglishFrontend::new(false).unwrap();
        let ps = english_with_hanzi(&english, "I love 北京 food.").unwrap();
        assert!(ps.contains("pei↓ ʨi→ŋ"), "{ps}");
        assert!(ps.starts_with("I lˈʌv"), "{ps}");
    }
}
