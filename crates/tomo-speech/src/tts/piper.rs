//! Piper neural voices run directly with ONNX Runtime.
//!
//! A Piper voice is a VITS model (`*.onnx`) plus its config (`*.onnx.json`: sample rate, espeak-ng voice,
//! inference scales, phoneme → id map). Text becomes espeak-ng phonemes ([`super::phonemes`]), phonemes
//! become ids, and the model turns one sentence of ids into float audio.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use tomo_audio::Audio;
use tomo_onnx::ort::session::Session;
use tomo_onnx::ort::value::Tensor;

use super::phonemes::{Espeak, PhonemeIdMap};
use super::{TextToSpeech, TtsError, text, trim};

/// Longest phoneme string given to the model at once. Piper voices are trained on sentences; much longer
/// inputs cost quadratic attention time and drift in prosody, so long sentences are cut at clause and word
/// boundaries.
const MAX_PHONEMES: usize = 400;

/// Each sentence is scaled to this peak, as Piper normalizes its output; below 1.0 for headroom when the
/// playback side resamples.
const PEAK: f32 = 0.95;

/// What Tomo uses from a Piper `.onnx.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct PiperConfig {
    pub sample_rate: u32,
    /// espeak-ng voice that produced the training phonemes (`espeak.voice`).
    pub espeak_voice: String,
    pub noise_scale: f32,
    pub length_scale: f32,
    pub noise_w: f32,
    pub num_speakers: u32,
    pub phonemes: PhonemeIdMap,
}

impl PiperConfig {
    /// Reads and validates `path`; errors name the file and the offending field.
    pub fn load(path: &Path) -> Result<Self, TtsError> {
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => TtsError::VoiceMissing(path.display().to_string()),
            _ => TtsError::VoiceLoad {
                path: path.display().to_string(),
                message: e.to_string(),
            },
        })?;
        Self::parse(&text, path)
    }

    /// Parses config `text`; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, TtsError> {
        let bad = |field: &str, message: String| TtsError::Config {
            path: path.display().to_string(),
            field: field.to_owned(),
            message,
        };
        let doc: Value =
            serde_json::from_str(text).map_err(|e| bad("(document)", e.to_string()))?;
        let sample_rate = match doc.pointer("/audio/sample_rate").and_then(Value::as_u64) {
            Some(rate) if (1000..=384_000).contains(&rate) => rate as u32,
            Some(rate) => {
                return Err(bad(
                    "audio.sample_rate",
                    format!("{rate} Hz is implausible"),
                ));
            }
            None => return Err(bad("audio.sample_rate", "missing or not an integer".into())),
        };
        if let Some(kind) = doc.get("phoneme_type")
            && kind.as_str() != Some("espeak")
        {
            return Err(bad(
                "phoneme_type",
                format!("{kind} is not supported (only \"espeak\")"),
            ));
        }
        let espeak_voice = doc
            .pointer("/espeak/voice")
            .and_then(Value::as_str)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| bad("espeak.voice", "missing or not a string".into()))?
            .to_owned();
        let scale = |name: &str, default: f32| -> Result<f32, TtsError> {
            match doc.pointer(&format!("/inference/{name}")) {
                None | Some(Value::Null) => Ok(default),
                Some(v) => v
                    .as_f64()
                    .map(|v| v as f32)
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| {
                        bad(
                            &format!("inference.{name}"),
                            format!("{v} is not a number >= 0"),
                        )
                    }),
            }
        };
        let noise_scale = scale("noise_scale", 0.667)?;
        let length_scale = scale("length_scale", 1.0)?;
        let noise_w = scale("noise_w", 0.8)?;
        if length_scale <= 0.0 {
            return Err(bad(
                "inference.length_scale",
                "must be greater than 0".into(),
            ));
        }
        let num_speakers = match doc.get("num_speakers") {
            None | Some(Value::Null) => 1,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
                .ok_or_else(|| bad("num_speakers", format!("{v} is not a positive integer")))?
                as u32,
        };
        let ids = parse_id_map(&doc).map_err(|(field, message)| bad(&field, message))?;
        let substitutions =
            parse_substitutions(&doc).map_err(|(field, message)| bad(&field, message))?;
        let phonemes = PhonemeIdMap::new(ids, substitutions)
            .map_err(|e| bad("phoneme_id_map", e.to_string()))?;
        Ok(Self {
            sample_rate,
            espeak_voice,
            noise_scale,
            length_scale,
            noise_w,
            num_speakers,
            phonemes,
        })
    }
}

fn single_char(key: &str) -> Option<char> {
    let mut chars = key.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

fn parse_id_map(doc: &Value) -> Result<HashMap<char, Vec<i64>>, (String, String)> {
    let field = "phoneme_id_map";
    let map = doc
        .get(field)
        .and_then(Value::as_object)
        .ok_or_else(|| (field.to_owned(), "missing or not an object".to_owned()))?;
    let mut out = HashMap::new();
    for (key, ids) in map {
        let at = || format!("{field}[{key:?}]");
        let Some(phoneme) = single_char(key) else {
            // Newer Piper voices may map merged vowel clusters (several characters) to one id; without
            // merging they are read as single phonemes, which those voices also map.
            tracing::warn!(key = %key, "multi-character phoneme ignored (vowel clusters are not merged)");
            continue;
        };
        let ids = ids
            .as_array()
            .map(|ids| ids.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
            .and_then(|ids| ids.filter(|ids| !ids.is_empty()))
            .ok_or_else(|| (at(), format!("{ids} is not a non-empty list of integers")))?;
        out.insert(phoneme, ids);
    }
    Ok(out)
}

fn parse_substitutions(doc: &Value) -> Result<HashMap<char, Vec<char>>, (String, String)> {
    let field = "phoneme_map";
    let Some(map) = doc.get(field).filter(|v| !v.is_null()) else {
        return Ok(HashMap::new());
    };
    let map = map
        .as_object()
        .ok_or_else(|| (field.to_owned(), "not an object".to_owned()))?;
    map.iter()
        .map(|(key, to)| {
            let at = || format!("{field}[{key:?}]");
            let from = single_char(key)
                .ok_or_else(|| (at(), "keys must be single characters".to_owned()))?;
            let to = to
                .as_array()
                .map(|to| {
                    to.iter()
                        .map(|p| p.as_str().and_then(single_char))
                        .collect::<Option<Vec<_>>>()
                })
                .and_then(|to| to)
                .ok_or_else(|| (at(), format!("{to} is not a list of single characters")))?;
            Ok((from, to))
        })
        .collect()
}

/// A Piper voice.
pub struct PiperTts {
    // ort 2.0.0-rc.15's `Session::run` takes `&mut self`.
    session: Mutex<Session>,
    config: PiperConfig,
    espeak: Espeak,
    speed: f32,
    /// Multi-speaker voices take a speaker id input.
    takes_speaker_id: bool,
    model: PathBuf,
}

impl std::fmt::Debug for PiperTts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PiperTts")
            .field("model", &self.model)
            .field("speed", &self.speed)
            .finish_non_exhaustive()
    }
}

impl PiperTts {
    /// Loads the voice `model` with its `config` (`.onnx.json`), using ONNX Runtime from `runtime`.
    /// `speed` 1.0 is the voice's normal rate; 1.5 speaks 1.5 times as fast.
    pub fn new(model: &Path, config: &Path, runtime: &Path, speed: f32) -> Result<Self, TtsError> {
        check_speed(speed)?;
        if !model.is_file() {
            return Err(TtsError::VoiceMissing(model.display().to_string()));
        }
        let config = PiperConfig::load(config)?;
        let espeak = Espeak::new(&config.espeak_voice)?;
        let environment = tomo_onnx::environment(runtime)?;
        let load_error = |message: String| TtsError::VoiceLoad {
            path: model.display().to_string(),
            message,
        };
        // As many threads as ONNX Runtime would take by itself (one per core), sleeping between runs.
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let session = tomo_onnx::session(&environment, model, threads).map_err(load_error)?;
        let input_names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for required in ["input", "input_lengths", "scales"] {
            if !input_names.contains(&required) {
                return Err(load_error(format!(
                    "not a Piper voice: no `{required}` input (inputs: {input_names:?})"
                )));
            }
        }
        let takes_speaker_id = input_names.contains(&"sid");
        tracing::info!(model = %model.display(), sample_rate = config.sample_rate, "Piper voice loaded");
        Ok(Self {
            session: Mutex::new(session),
            config,
            espeak,
            speed,
            takes_speaker_id,
            model: model.to_path_buf(),
        })
    }

    pub fn config(&self) -> &PiperConfig {
        &self.config
    }

    /// The phonemes the model will read for `text`, one string per synthesized piece.
    pub fn phonemize(&self, text: &str) -> Result<Vec<String>, TtsError> {
        let mut pieces = Vec::new();
        for sentence in self.espeak.phonemize(text)? {
            if sentence.chars().count() <= MAX_PHONEMES {
                pieces.push(sentence);
            } else {
                pieces.extend(text::chunks(&sentence, MAX_PHONEMES));
            }
        }
        Ok(pieces)
    }

    /// Speaks a phoneme string directly (one piece, no espeak-ng). Phonemes the voice does not know are
    /// skipped with a warning.
    pub fn synthesize_phonemes(&self, phonemes: &str) -> Result<Audio, TtsError> {
        let mapped = self.config.phonemes.ids(phonemes);
        if !mapped.skipped.is_empty() {
            tracing::warn!(
                model = %self.model.display(),
                skipped = %mapped.skipped.iter().collect::<String>(),
                "phonemes missing from the voice's phoneme_id_map were skipped"
            );
        }
        // BOS, pad, EOS alone: nothing to say.
        if mapped.ids.len() <= 3 {
            return Ok(Audio::new(Vec::new(), self.config.sample_rate));
        }
        let mut samples = self.run(mapped.ids)?;
        normalize(&mut samples);
        Ok(Audio::new(samples, self.config.sample_rate))
    }

    fn run(&self, ids: Vec<i64>) -> Result<Vec<f32>, TtsError> {
        let failed = |e: tomo_onnx::ort::Error| {
            TtsError::Failed(format!("Piper voice {}: {e}", self.model.display()))
        };
        let count = ids.len();
        let scales = vec![
            self.config.noise_scale,
            self.config.length_scale / self.speed,
            self.config.noise_w,
        ];
        let input = Tensor::from_array(([1, count], ids)).map_err(failed)?;
        let lengths = Tensor::from_array(([1], vec![count as i64])).map_err(failed)?;
        let scales = Tensor::from_array(([3], scales)).map_err(failed)?;
        let mut inputs = tomo_onnx::ort::inputs![
            "input" => input,
            "input_lengths" => lengths,
            "scales" => scales,
        ];
        if self.takes_speaker_id {
            let sid = Tensor::from_array(([1], vec![0_i64])).map_err(failed)?;
            inputs.push(("sid".into(), sid.into()));
        }
        let mut session = self
            .session
            .lock()
            .map_err(|_| TtsError::Failed("Piper session poisoned by an earlier panic".into()))?;
        let outputs = session.run(inputs).map_err(failed)?;
        let (_, audio) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        Ok(audio.to_vec())
    }
}

impl TextToSpeech for PiperTts {
    fn name(&self) -> &str {
        "piper"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        let mut audio = Audio::new(Vec::new(), self.config.sample_rate);
        for piece in self.phonemize(text)? {
            tracing::debug!(phonemes = %piece, "Piper piece");
            audio
                .samples
                .extend(self.synthesize_phonemes(&piece)?.samples);
        }
        // The voice opens every sentence with ~40 ms of silence; the silences between pieces stay.
        trim::trim_lead(&mut audio.samples, self.config.sample_rate);
        Ok(audio)
    }
}

pub(crate) fn check_speed(speed: f32) -> Result<(), TtsError> {
    if speed.is_finite() && speed > 0.0 {
        Ok(())
    } else {
        Err(TtsError::InvalidSpeed(speed))
    }
}

/// Scales `samples` so the peak is [`PEAK`]; near-silence is left alone rather than amplified into noise.
fn normalize(samples: &mut [f32]) {
    let peak = samples.iter().fold(0.0_f32, |m, s| m.max(s.abs()));
    if peak > 0.01 {
        let gain = PEAK / peak;
        samples.iter_mut().for_each(|s| *s *= gain);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
        "audio": {"sample_rate": 22050},
        "espeak": {"voice": "en-us"},
        "inference": {"noise_scale": 0.5, "length_scale": 1.2, "noise_w": 0.7},
        "phoneme_type": "espeak",
        "phoneme_map": {},
        "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [14]},
        "num_speakers": 1
    }"#;

    fn parse(text: &str) -> Result<PiperConfig, TtsError> {
        PiperConfig::parse(text, Path::new("/voices/x.onnx.json"))
    }

    fn field_error(text: &str) -> (String, String) {
        match parse(text) {
            Err(TtsError::Config { path, field, .. }) => (path, field),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_piper_config() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.sample_rate, 22050);
        assert_eq!(config.espeak_voice, "en-us");
        assert_eq!(
            (config.noise_scale, config.length_scale, config.noise_w),
            (0.5, 1.2, 0.7)
        );
        assert!(config.phonemes.contains('a'));
    }

    #[test]
    fn missing_inference_uses_piper_defaults() {
        let text = r#"{"audio": {"sample_rate": 16000}, "espeak": {"voice": "de"},
            "phoneme_id_map": {"_": [0], "^": [1], "$": [2]}}"#;
        let config = parse(text).unwrap();
        assert_eq!(
            (config.noise_scale, config.length_scale, config.noise_w),
            (0.667, 1.0, 0.8)
        );
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let cases = [
            (GOOD.replace("22050", "\"fast\""), "audio.sample_rate"),
            (GOOD.replace("\"en-us\"", "7"), "espeak.voice"),
            (GOOD.replace("1.2", "-1"), "inference.length_scale"),
            (GOOD.replace("[14]", "[\"x\"]"), "phoneme_id_map[\"a\"]"),
            (GOOD.replace("\"_\": [0], ", ""), "phoneme_id_map"),
            (GOOD.replace("\"espeak\",", "\"text\","), "phoneme_type"),
            (
                GOOD.replace("\"num_speakers\": 1", "\"num_speakers\": 0"),
                "num_speakers",
            ),
            (GOOD[..40].to_owned(), "(document)"),
        ];
        for (text, expected) in cases {
            let (path, field) = field_error(&text);
            assert_eq!(path, "/voices/x.onnx.json");
            assert_eq!(field, expected, "{text}");
        }
    }

    #[test]
    fn normalize_scales_to_the_peak_and_leaves_silence() {
        let mut loud = vec![0.5, -2.0];
        normalize(&mut loud);
        assert_eq!(loud, [0.5 * PEAK / 2.0, -PEAK]);
        let mut quiet = vec![0.001, -0.002];
        normalize(&mut quiet);
        assert_eq!(quiet, [0.001, -0.002]);
    }
}
