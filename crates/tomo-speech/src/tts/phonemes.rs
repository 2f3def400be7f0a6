//! Text → Piper phonemes → model ids.
//!
//! Piper voices are trained on espeak-ng's IPA output *with the clause punctuation kept* (Piper's own
//! phonemizer asks libespeak-ng for each clause's terminator and appends it). The espeak-ng CLI
//! (`espeak-ng -q --ipa`) prints the same IPA but drops punctuation and prints one line per clause, so
//! [`Espeak::phonemize`] splits the text into clauses itself, phonemizes each one and puts the mark back:
//! `Hello, world.` → `həlˈoʊ, wˈɜːld.`. Sentences are returned separately because Piper synthesizes one
//! sentence at a time.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use super::TtsError;
use super::cli;
use super::text;

/// Piper's special symbols: padding between ids, beginning and end of the utterance.
pub const PAD: char = '_';
pub const BOS: char = '^';
pub const EOS: char = '$';

/// espeak-ng run as a phonemizer.
#[derive(Debug, Clone)]
pub struct Espeak {
    binary: PathBuf,
    voice: String,
    /// Joins the letters of one phoneme (`a^ɪ`, `t^ʃ`) so a mapping can tell diphthongs and affricates from
    /// two phonemes in a row; Kokoro's front end needs that, Piper's voices were trained without it.
    tie: Option<char>,
}

impl Espeak {
    /// Uses `espeak-ng` from `PATH`; checks that the binary runs and knows `voice`.
    pub fn new(voice: &str) -> Result<Self, TtsError> {
        Self::with_binary("espeak-ng", voice)
    }

    pub fn with_binary(binary: impl Into<PathBuf>, voice: &str) -> Result<Self, TtsError> {
        let espeak = Self {
            binary: binary.into(),
            voice: voice.to_owned(),
            tie: None,
        };
        check_voice(&espeak.binary, voice)?;
        Ok(espeak)
    }

    pub fn voice(&self) -> &str {
        &self.voice
    }

    /// Marks multi-letter phonemes with `tie` (espeak-ng `--tie`).
    #[must_use]
    pub fn with_tie(mut self, tie: char) -> Self {
        self.tie = Some(tie);
        self
    }

    /// Piper phonemes of `text`, one string per sentence (clauses inside a sentence joined by spaces, each
    /// followed by its punctuation). Text without anything to say gives no sentences.
    pub fn phonemize(&self, text: &str) -> Result<Vec<String>, TtsError> {
        let mut sentences = Vec::new();
        let mut current = String::new();
        for clause in text::clauses(text) {
            let phonemes = self.phonemize_clause(clause.text)?;
            if !phonemes.is_empty() {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(&phonemes);
                if let Some(mark) = clause.punct {
                    current.push(mark);
                }
            }
            if clause.ends_sentence && !current.is_empty() {
                sentences.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            sentences.push(current);
        }
        Ok(sentences)
    }

    /// IPA of one clause without punctuation. espeak-ng may still split it (`Mr. Smith` is two clauses to
    /// it); its lines are joined with spaces.
    fn phonemize_clause(&self, clause: &str) -> Result<String, TtsError> {
        // Newlines would not change espeak's clauses but could end its input early in some modes.
        let input = clause.replace(['\n', '\r'], " ");
        let tie = self.tie.map(|c| format!("--tie={c}"));
        let mut args = vec!["-q", "--ipa", "-v", &self.voice];
        args.extend(tie.as_deref());
        let output = cli::run(&self.binary, "espeak-ng", &args, Some(&input))?;
        let ipa = String::from_utf8_lossy(&output.stdout);
        Ok(ipa
            .lines()
            .map(strip_language_switches)
            .map(|line| line.trim().to_owned())
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" "))
    }
}

/// Fails unless `binary` runs and accepts `voice`.
fn check_voice(binary: &Path, voice: &str) -> Result<(), TtsError> {
    match cli::run(binary, "espeak-ng", &["-q", "-v", voice, ""], None) {
        Err(TtsError::Failed(message)) => Err(TtsError::VoiceMissing(format!(
            "espeak-ng voice `{voice}` ({message})"
        ))),
        other => other.map(drop),
    }
}

/// Removes espeak-ng's language-switch markers such as `(en)` and `(cmn)`, which it prints when a word is
/// read with another language's rules; they are not phonemes and Piper removes them too.
fn strip_language_switches(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('(') {
        let after = &rest[open + 1..];
        match after.find(')') {
            Some(close)
                if close > 0
                    && after[..close]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                out.push_str(&rest[..open]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A `phoneme_id_map` Piper cannot speak with; the voice loader names the file and the field around it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PhonemeMapError {
    #[error("has no ids for the required symbol `{0}`")]
    MissingSymbol(char),
}

/// A voice's `phoneme_id_map` (and optional `phoneme_map` substitutions).
#[derive(Debug, Clone, PartialEq)]
pub struct PhonemeIdMap {
    ids: HashMap<char, Vec<i64>>,
    substitutions: HashMap<char, Vec<char>>,
}

/// Ids for one utterance and the phonemes that had none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhonemeIds {
    pub ids: Vec<i64>,
    /// Phonemes missing from the map, each once, in order of first appearance; they were skipped.
    pub skipped: Vec<char>,
}

impl PhonemeIdMap {
    /// `ids`: phoneme → ids; must contain the pad, BOS and EOS symbols. `Err` names what is wrong.
    pub fn new(
        ids: HashMap<char, Vec<i64>>,
        substitutions: HashMap<char, Vec<char>>,
    ) -> Result<Self, PhonemeMapError> {
        for symbol in [PAD, BOS, EOS] {
            match ids.get(&symbol) {
                Some(v) if !v.is_empty() => {}
                _ => return Err(PhonemeMapError::MissingSymbol(symbol)),
            }
        }
        Ok(Self { ids, substitutions })
    }

    /// Whether `phoneme` has ids.
    pub fn contains(&self, phoneme: char) -> bool {
        self.ids.contains_key(&phoneme)
    }

    /// Piper's id sequence: BOS, pad, then each phoneme's ids followed by a pad, then EOS. Like Piper,
    /// phonemes are NFD-decomposed first (accents and other combining marks have their own ids); a
    /// precomposed phoneme whose parts are not all in the map is looked up whole. Phonemes that have no ids
    /// either way are skipped.
    pub fn ids(&self, phonemes: &str) -> PhonemeIds {
        let mut out = PhonemeIds::default();
        let mut skipped = BTreeSet::new();
        self.extend(&mut out.ids, BOS);
        self.extend(&mut out.ids, PAD);
        for phoneme in phonemes.chars().flat_map(|c| self.substitute(c)) {
            let parts: Vec<char> = std::iter::once(phoneme).nfd().collect();
            let found = if parts.iter().all(|p| self.contains(*p)) {
                parts
            } else if self.contains(phoneme) {
                vec![phoneme]
            } else {
                if skipped.insert(phoneme) {
                    out.skipped.push(phoneme);
                }
                continue;
            };
            for part in found {
                self.extend(&mut out.ids, part);
                self.extend(&mut out.ids, PAD);
            }
        }
        self.extend(&mut out.ids, EOS);
        out
    }

    fn substitute(&self, phoneme: char) -> Vec<char> {
        self.substitutions
            .get(&phoneme)
            .cloned()
            .unwrap_or_else(|| vec![phoneme])
    }

    fn extend(&self, ids: &mut Vec<i64>, phoneme: char) {
        if let Some(found) = self.ids.get(&phoneme) {
            ids.extend_from_slice(found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> PhonemeIdMap {
        let ids = [
            ('_', 0),
            ('^', 1),
            ('$', 2),
            (' ', 3),
            ('a', 14),
            ('c', 16),
            ('̧', 140),
        ]
        .into_iter()
        .map(|(c, id)| (c, vec![id]))
        .collect();
        PhonemeIdMap::new(ids, HashMap::new()).unwrap()
    }

    #[test]
    fn interleaves_pad_between_bos_and_eos() {
        assert_eq!(map().ids("a a").ids, [1, 0, 14, 0, 3, 0, 14, 0, 2]);
    }

    #[test]
    fn unknown_phonemes_are_skipped_and_reported_once() {
        let out = map().ids("a☃a☃");
        assert_eq!(out.ids, [1, 0, 14, 0, 14, 0, 2]);
        assert_eq!(out.skipped, ['☃']);
    }

    #[test]
    fn precomposed_phonemes_are_decomposed_as_piper_does() {
        // `c` and the combining cedilla are in this map, so `ç` is read as the two.
        assert_eq!(map().ids("ç").ids, [1, 0, 16, 0, 140, 0, 2]);
        // A map that only knows the precomposed form gets it whole.
        let ids = [('_', 0), ('^', 1), ('$', 2), ('ç', 40)]
            .into_iter()
            .map(|(c, id)| (c, vec![id]))
            .collect();
        let map = PhonemeIdMap::new(ids, HashMap::new()).unwrap();
        assert_eq!(map.ids("ç").ids, [1, 0, 40, 0, 2]);
    }

    #[test]
    fn substitutions_apply_before_lookup() {
        let ids = [('_', 0), ('^', 1), ('$', 2), ('a', 14)]
            .into_iter()
            .map(|(c, id)| (c, vec![id]))
            .collect();
        let map = PhonemeIdMap::new(ids, HashMap::from([('x', vec!['a', 'a'])])).unwrap();
        assert_eq!(map.ids("x").ids, [1, 0, 14, 0, 14, 0, 2]);
    }

    #[test]
    fn a_map_without_pad_is_rejected() {
        let ids = HashMap::from([('^', vec![1]), ('$', vec![2])]);
        let err = PhonemeIdMap::new(ids, HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains('_'), "{err}");
    }

    #[test]
    fn language_switch_markers_are_removed_but_other_parentheses_kept() {
        assert_eq!(strip_language_switches("(en)hə5lˈoʊ(cmn) x"), "hə5lˈoʊ x");
        assert_eq!(strip_language_switches("a (b c) d()"), "a (b c) d()");
    }

    #[test]
    fn espeak_output_keeps_punctuation_per_clause_and_splits_sentences() {
        let espeak = Espeak::new("en-us").unwrap();
        let sentences = espeak.phonemize("Hello, world. How are you? 3.14").unwrap();
        assert_eq!(sentences.len(), 3, "{sentences:?}");
        assert_eq!(sentences[0], "həlˈoʊ, wˈɜːld.");
        assert!(sentences[1].ends_with('?'), "{sentences:?}");
        assert!(sentences[2].starts_with("θɹˈiː"), "{sentences:?}");
        assert!(espeak.phonemize(" ... ").unwrap().is_empty());
    }

    #[test]
    fn an_unknown_espeak_voice_is_voice_missing() {
        let err = Espeak::new("zz-nonexistent").unwrap_err();
        assert!(matches!(err, TtsError::VoiceMissing(_)), "{err:?}");
        assert!(err.to_string().contains("zz-nonexistent"), "{err}");
    }
}
