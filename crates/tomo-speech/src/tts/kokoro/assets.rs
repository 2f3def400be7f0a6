//! Kokoro's files besides the model: the phoneme vocabulary (`vocab.json`) and the voices (`<name>.bin`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::super::TtsError;

/// Width of one style vector.
pub const STYLE_DIM: usize = 256;
/// Rows of a voice: one style vector per input length, 1 to 510 phoneme tokens.
pub const STYLE_ROWS: usize = 510;
/// The most phoneme tokens one model run takes (its context is 512 with the two padding tokens).
pub const MAX_TOKENS: usize = STYLE_ROWS;

/// Where Kokoro's files live in the model store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KokoroPaths {
    pub model: PathBuf,
    pub vocab: PathBuf,
    pub voices: PathBuf,
}

impl KokoroPaths {
    /// The layout `tomo models install` creates under `models_root`.
    pub fn in_store(models_root: &Path) -> Self {
        let dir = models_root.join("kokoro");
        Self {
            model: dir.join("kokoro-v1.0.int8.onnx"),
            vocab: dir.join("vocab.json"),
            voices: dir.join("voices"),
        }
    }

    pub fn voice(&self, name: &str) -> PathBuf {
        self.voices.join(format!("{name}.bin"))
    }

    /// Names of the voices present, sorted.
    pub fn installed_voices(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.voices) else {
            return Vec::new();
        };
        let names: BTreeSet<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let path = e.path();
                (path.extension()? == "bin")
                    .then(|| path.file_stem()?.to_str().map(str::to_owned))
                    .flatten()
            })
            .collect();
        names.into_iter().collect()
    }
}

/// Phoneme → token id.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocab {
    ids: HashMap<char, i64>,
}

/// Token ids of a phoneme string and the phonemes that had none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tokens {
    pub ids: Vec<i64>,
    /// Phonemes missing from the vocabulary, each once, in order of first appearance; they were skipped.
    pub skipped: Vec<char>,
}

impl Vocab {
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

    /// `{"vocab": {"a": 43, ...}}`; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, TtsError> {
        let bad = |field: &str, message: String| TtsError::Config {
            path: path.display().to_string(),
            field: field.to_owned(),
            message,
        };
        let doc: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad("(document)", e.to_string()))?;
        let map = doc
            .get("vocab")
            .and_then(serde_json::Value::as_object)
            .ok_or_else(|| bad("vocab", "missing or not an object".into()))?;
        let mut ids = HashMap::with_capacity(map.len());
        for (key, id) in map {
            let field = format!("vocab[{key:?}]");
            let mut chars = key.chars();
            let (Some(phoneme), None) = (chars.next(), chars.next()) else {
                return Err(bad(&field, "keys must be single characters".into()));
            };
            let id = id
                .as_i64()
                .filter(|id| *id > 0)
                .ok_or_else(|| bad(&field, format!("{id} is not a positive integer")))?;
            ids.insert(phoneme, id);
        }
        if ids.is_empty() {
            return Err(bad("vocab", "is empty".into()));
        }
        Ok(Self { ids })
    }

    pub fn contains(&self, phoneme: char) -> bool {
        self.ids.contains_key(&phoneme)
    }

    /// Ids of the phonemes of `phonemes` (without the padding tokens).
    pub fn tokens(&self, phonemes: &str) -> Tokens {
        let mut out = Tokens::default();
        for c in phonemes.chars() {
            match self.ids.get(&c) {
                Some(id) => out.ids.push(*id),
                None if !out.skipped.contains(&c) => out.skipped.push(c),
                None => {}
            }
        }
        out
    }
}

/// Why bytes are not a Kokoro voice; `VoiceStyle::load` names the file around it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VoiceStyleError {
    #[error(
        "{0} bytes, a Kokoro voice is {expected} (float32 [{rows}, {dim}])",
        expected = STYLE_ROWS * STYLE_DIM * 4, rows = STYLE_ROWS, dim = STYLE_DIM
    )]
    WrongSize(usize),
    #[error("contains values that are not finite numbers")]
    NotFinite,
}

/// A voice: one style vector per input length.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceStyle {
    rows: Vec<f32>,
}

impl VoiceStyle {
    /// Raw little-endian float32 `[510, 256]`, as the voices ship.
    pub fn load(path: &Path) -> Result<Self, TtsError> {
        let bytes = std::fs::read(path).map_err(|e| TtsError::VoiceLoad {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_bytes(&bytes).map_err(|e| TtsError::VoiceLoad {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, VoiceStyleError> {
        if bytes.len() != STYLE_ROWS * STYLE_DIM * 4 {
            return Err(VoiceStyleError::WrongSize(bytes.len()));
        }
        let rows: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if !rows.iter().all(|v| v.is_finite()) {
            return Err(VoiceStyleError::NotFinite);
        }
        Ok(Self { rows })
    }

    /// The style vector for an input of `tokens` phoneme tokens (clamped to 1..=510, so any length is safe).
    pub fn for_length(&self, tokens: usize) -> &[f32] {
        let row = tokens.clamp(1, STYLE_ROWS) - 1;
        &self.rows[row * STYLE_DIM..(row + 1) * STYLE_DIM]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_parses_and_errors_name_the_field() {
        let vocab = Vocab::parse(r#"{"vocab": {"a": 43, " ": 16}}"#, Path::new("v.json")).unwrap();
        assert_eq!(
            vocab.tokens("a ☃a☃"),
            Tokens {
                ids: vec![43, 16, 43],
                skipped: vec!['☃']
            }
        );
        for (text, field) in [
            (r#"{"vocab": {"ab": 1}}"#, "vocab[\"ab\"]"),
            (r#"{"vocab": {"a": "x"}}"#, "vocab[\"a\"]"),
            (r#"{"vocab": {"a": 0}}"#, "vocab[\"a\"]"),
            (r#"{"other": {}}"#, "vocab"),
            ("{", "(document)"),
        ] {
            match Vocab::parse(text, Path::new("/k/vocab.json")) {
                Err(TtsError::Config { path, field: f, .. }) => {
                    assert_eq!(
                        (path.as_str(), f.as_str()),
                        ("/k/vocab.json", field),
                        "{text}"
                    );
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn style_rows_are_picked_by_length_and_clamped() {
        let bytes: Vec<u8> = (0..STYLE_ROWS * STYLE_DIM)
            .flat_map(|i| ((i / STYLE_DIM) as f32).to_le_bytes())
            .collect();
        let style = VoiceStyle::from_bytes(&bytes).unwrap();
        assert_eq!(style.for_length(1)[0], 0.0);
        assert_eq!(style.for_length(10)[255], 9.0);
        assert_eq!(style.for_length(510)[0], 509.0);
        assert_eq!(
            style.for_length(2000)[0],
            509.0,
            "longer inputs never read past row 510"
        );
        assert_eq!(style.for_length(0)[0], 0.0);
        assert!(VoiceStyle::from_bytes(&bytes[..100]).is_err());
    }
}
