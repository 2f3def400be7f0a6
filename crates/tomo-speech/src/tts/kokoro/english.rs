//! English for Kokoro: espeak-ng's IPA rewritten into the phoneme set Kokoro's English voices were trained
//! on (misaki's): diphthongs as one capital letter (`A` = eɪ, `I` = aɪ, `W` = aʊ, `Y` = ɔɪ, American `O` =
//! oʊ, British `Q` = əʊ), affricates as `ʤ`/`ʧ`, `ɹ` for every r, the American flap as `T`, syllabic
//! consonants with a small schwa before them (`ᵊl`), no length marks in American English.
//!
//! espeak-ng is asked to tie the letters of one phoneme (`a^ɪ`, `t^ʃ`) so that a diphthong is told apart
//! from two vowels that merely meet at a syllable boundary.

use super::super::TtsError;
use super::super::phonemes::Espeak;

const TIE: char = '^';

/// Rewrites that need the tie, longest first so `ʔˌn̩` wins over `ʔ`. Applied before the tie is removed.
const TIED: [(&str, &str); 11] = [
    ("ʔˌn\u{329}", "tᵊn"),
    ("ʔn\u{329}", "tᵊn"),
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("d^ʒ", "ʤ"),
    ("e^ɪ", "A"),
    ("t^ʃ", "ʧ"),
    ("ɔ^ɪ", "Y"),
    ("ə^l", "ᵊl"),
    ("ʲo", "jo"),
    ("ʲə", "jə"),
];

/// Single-symbol rewrites shared by both accents (after the accent-specific ones).
const SHARED: [(&str, &str); 11] = [
    ("ʲ", ""),
    ("ɚ", "əɹ"),
    ("r", "ɹ"),
    ("x", "k"),
    ("ç", "k"),
    ("ɐ", "ə"),
    ("ɬ", "l"),
    ("\u{303}", ""),
    ("e", "A"),
    // Kokoro v1.0 reads the American flap and the glottal stop as these letters.
    ("ɾ", "T"),
    ("ʔ", "t"),
];

/// Kokoro phonemes of espeak-ng output `ipa` (with `^` ties) for American or British English.
pub fn espeak_to_kokoro(ipa: &str, british: bool) -> String {
    let mut ps = ipa.to_owned();
    let accent: &[(&str, &str)] = if british {
        &[("e^ə", "ɛː"), ("ə^ʊ", "Q")]
    } else {
        &[("o^ʊ", "O")]
    };
    for (from, to) in TIED.iter().chain(accent) {
        ps = ps.replace(from, to);
    }
    ps = syllabic_consonants(&ps.replace(TIE, ""));
    if british {
        ps = ps.replace("iə", "ɪə");
    } else {
        ps = ps
            .replace("ɜːɹ", "ɜɹ")
            .replace("ɜː", "ɜɹ")
            .replace("ɪə", "iə")
            .replace('ː', "");
    }
    for (from, to) in SHARED {
        ps = ps.replace(from, to);
    }
    // espeak-ng before 1.52 writes a bare `o` where Kokoro expects `ɔ`.
    ps.replace('o', "ɔ")
}

/// `n̩` (a consonant with the syllabic mark) → `ᵊn`.
fn syllabic_consonants(ps: &str) -> String {
    let mut out = String::with_capacity(ps.len());
    let mut chars = ps.chars().peekable();
    while let Some(c) = chars.next() {
        if chars.peek() == Some(&'\u{329}') {
            chars.next();
            if !c.is_whitespace() {
                out.push('ᵊ');
            }
        }
        out.push(c);
    }
    out.replace('\u{329}', "")
}

/// English text → Kokoro phonemes through espeak-ng.
#[derive(Debug, Clone)]
pub struct EnglishFrontend {
    espeak: Espeak,
    british: bool,
}

impl EnglishFrontend {
    /// American (`en-us`) or British (`en-gb`) English; fails when espeak-ng is missing.
    pub fn new(british: bool) -> Result<Self, TtsError> {
        let voice = if british { "en-gb" } else { "en-us" };
        Ok(Self {
            espeak: Espeak::new(voice)?.with_tie(TIE),
            british,
        })
    }

    /// Phonemes of `text`, clause punctuation kept; sentences joined by spaces.
    pub fn phonemize(&self, text: &str) -> Result<String, TtsError> {
        let sentences = self.espeak.phonemize(text)?;
        Ok(sentences
            .iter()
            .map(|s| espeak_to_kokoro(s, self.british))
            .collect::<Vec<_>>()
            .join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn american_rewrites() {
        assert_eq!(espeak_to_kokoro("həlˈo^ʊ wˈɜːld", false), "həlˈO wˈɜɹld");
        assert_eq!(espeak_to_kokoro("hˌa^ʊ ɑː^ɹ juː", false), "hˌW ɑɹ ju");
        assert_eq!(
            espeak_to_kokoro("a^ɪd lˈa^ɪk ɐ kˈʌp", false),
            "Id lˈIk ə kˈʌp"
        );
        assert_eq!(espeak_to_kokoro("wˈɔːɾɚ", false), "wˈɔTəɹ");
        assert_eq!(espeak_to_kokoro("bˈʌʔn\u{329}", false), "bˈʌtᵊn");
        assert_eq!(espeak_to_kokoro("t^ʃˈiːz d^ʒˈʌmp", false), "ʧˈiz ʤˈʌmp");
        assert_eq!(espeak_to_kokoro("tədˈe^ɪ", false), "tədˈA");
        assert_eq!(espeak_to_kokoro("bˈɔ^ɪ", false), "bˈY");
    }

    #[test]
    fn british_keeps_length_and_its_own_vowels() {
        assert_eq!(espeak_to_kokoro("həlˈə^ʊ", true), "həlˈQ");
        assert_eq!(espeak_to_kokoro("hˈe^ə", true), "hˈɛː");
        assert_eq!(espeak_to_kokoro("kˈɑːɹ", true), "kˈɑːɹ");
    }

    #[test]
    fn espeak_output_maps_into_the_vocabulary() {
        let english = EnglishFrontend::new(false).unwrap();
        let ps = english
            .phonemize("Hello, world. Judge the church's thick yellow boy!")
            .unwrap();
        assert!(ps.starts_with("həlˈO, wˈɜɹld."), "{ps}");
        assert!(
            ps.contains('ʤ') && ps.contains('ʧ') && ps.contains('Y'),
            "{ps}"
        );
        assert!(!ps.contains(['^', 'ː', 'r', 'o']), "{ps}");
    }
}
