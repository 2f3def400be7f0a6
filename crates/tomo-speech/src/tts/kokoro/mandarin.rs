//! Mandarin for Kokoro: Hanzi → pinyin with tones (crate `pinyin`, with word-level fixes for characters that
//! have several readings) → Kokoro's Mandarin symbols ([`super::pinyin_ipa`]). Before that, full-width
//! letters and digits are folded to ASCII and numbers are spelled out in Chinese ([`super::zh_numbers`]);
//! Latin words inside Chinese text are read as English (espeak-ng, [`super::english`]); Chinese punctuation
//! becomes the Latin marks Kokoro's vocabulary has.

use pinyin::ToPinyin;

use super::super::TtsError;
use super::english::EnglishFrontend;
use super::mandarin_words::{CHARACTER_READINGS, WORDS};
use super::pinyin_ipa::syllable_to_ipa;
use super::zh_numbers;

/// Longest word in [`WORDS`], in characters.
const MAX_WORD_CHARS: usize = 4;

/// Ideographs (and 〇, which reads líng).
pub fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF)
        || c == '〇'
}

/// Full-width ASCII (`ＡＢＣ１２３％`) → ASCII, the ideographic space → a space.
pub fn fold_full_width(text: &str) -> String {
    text.chars()
        .map(|c| match c as u32 {
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            0x3000 => ' ',
            _ => c,
        })
        .collect()
}

/// Kokoro's mark for a CJK or Latin punctuation character, if it is one; `None` for other characters.
fn punctuation(c: char) -> Option<&'static str> {
    Some(match c {
        ',' | '、' | '，' => ",",
        '.' | '。' | '｡' => ".",
        '!' => "!",
        '?' => "?",
        ':' => ":",
        ';' => ";",
        '…' => "…",
        '—' | '–' | '~' | '～' => "—",
        '“' | '「' | '『' | '《' | '【' | '〈' => "“",
        '”' | '」' | '』' | '》' | '】' | '〉' => "”",
        '"' => "\"",
        '(' | '（' => "(",
        ')' | '）' => ")",
        _ => return None,
    })
}

/// The pinyin of each character of a Han run (tone number at the end), words from [`WORDS`] first.
pub fn run_pinyin(run: &[char]) -> Vec<String> {
    let mut out = Vec::with_capacity(run.len());
    let mut i = 0;
    while i < run.len() {
        let word = (2..=MAX_WORD_CHARS.min(run.len() - i))
            .rev()
            .find_map(|len| {
                let candidate: String = run[i..i + len].iter().collect();
                WORDS
                    .iter()
                    .find(|(w, _)| *w == candidate)
                    .map(|(_, reading)| (len, *reading))
            });
        if let Some((len, reading)) = word {
            out.extend(reading.split(' ').map(str::to_owned));
            i += len;
            continue;
        }
        let c = run[i];
        let reading = CHARACTER_READINGS
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, r)| (*r).to_owned())
            .or_else(|| c.to_pinyin().map(|p| p.with_tone_num_end().to_owned()));
        // A character with no reading (rare ideographs) is skipped rather than spelled out.
        out.extend(reading);
        i += 1;
    }
    out
}

/// Kokoro phonemes of a Han run, one space between syllables. misaki puts spaces between the words of a
/// segmenter; without one, syllables run together and whisper base misheard every third character of
/// `zf_xiaoxiao`'s speech (CER 0.15 on ten sentences), with a space after each syllable 0.01.
pub fn han_to_ipa(run: &[char]) -> String {
    run_pinyin(run)
        .iter()
        .filter_map(|syllable| syllable_to_ipa(syllable))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Mandarin text → Kokoro phonemes.
#[derive(Debug, Clone)]
pub struct MandarinFrontend {
    /// Reads Latin words; `None` when espeak-ng is missing (they are then left out).
    english: Option<EnglishFrontend>,
}

impl MandarinFrontend {
    pub fn new() -> Self {
        let english = EnglishFrontend::new(false)
            .inspect_err(|error| {
                tracing::warn!(%error, "no espeak-ng: English words in Mandarin text are not spoken");
            })
            .ok();
        Self { english }
    }

    /// Phonemes of `text`; punctuation kept as Kokoro marks, each followed by a space.
    pub fn phonemize(&self, text: &str) -> Result<String, TtsError> {
        let text = zh_numbers::read_numbers(&fold_full_width(text));
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len() * 3);
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if is_han(c) {
                let end = run_end(&chars, i, |c| is_han(*c));
                push_word(&mut out, &han_to_ipa(&chars[i..end]));
                i = end;
            } else if c.is_ascii_alphabetic() {
                // Latin words, with the spaces, apostrophes and hyphens between them.
                let end = run_end(&chars, i, |c| {
                    c.is_ascii_alphabetic() || matches!(c, ' ' | '\'' | '-')
                });
                let words: String = chars[i..end].iter().collect();
                if let Some(english) = &self.english {
                    push_word(&mut out, &english.phonemize(words.trim())?);
                }
                i = end;
            } else if let Some(mark) = punctuation(c) {
                let trimmed = out.trim_end().len();
                out.truncate(trimmed);
                out.push_str(mark);
                out.push(' ');
                i += 1;
            } else {
                // Whitespace separates; emoji and other symbols are not spoken.
                if !out.ends_with(' ') && !out.is_empty() {
                    out.push(' ');
                }
                i += 1;
            }
        }
        Ok(out.trim().to_owned())
    }
}

impl Default for MandarinFrontend {
    fn default() -> Self {
        Self::new()
    }
}

fn run_end(chars: &[char], start: usize, keep: impl Fn(&char) -> bool) -> usize {
    chars[start..]
        .iter()
        .position(|c| !keep(c))
        .map_or(chars.len(), |n| start + n)
}

fn push_word(out: &mut String, word: &str) {
    if word.is_empty() {
        return;
    }
    if !out.is_empty() && !out.ends_with([' ', '(', '“']) {
        out.push(' ');
    }
    out.push_str(word);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn words_fix_readings_the_character_table_gets_wrong() {
        assert_eq!(run_pinyin(&chars("银行")), ["yin2", "hang2"]);
        assert_eq!(
            run_pinyin(&chars("我觉得很好")),
            ["wo3", "jue2", "de5", "hen3", "hao3"]
        );
        assert_eq!(run_pinyin(&chars("跑得快")), ["pao3", "de5", "kuai4"]);
        assert_eq!(run_pinyin(&chars("长城")), ["chang2", "cheng2"]);
        assert_eq!(run_pinyin(&chars("为什么")), ["wei4", "shen2", "me5"]);
    }

    #[test]
    fn sentences_become_kokoro_symbols_with_latin_marks() {
        let zh = MandarinFrontend::new();
        assert_eq!(zh.phonemize("你好，世界。").unwrap(), "ni↓ xau↓, ʂɨ↘ ʨje↘.");
        assert_eq!(
            zh.phonemize("今天十点！").unwrap(),
            "ʨi→n tʰjɛ→n ʂɨ↗ tjɛ↓n!"
        );
        // Numbers, full-width digits and percent signs are read out.
        assert_eq!(zh.phonemize("３个").unwrap(), zh.phonemize("三个").unwrap());
        assert_eq!(
            zh.phonemize("50%").unwrap(),
            zh.phonemize("百分之五十").unwrap()
        );
    }

    #[test]
    fn latin_words_are_read_as_english_and_emoji_dropped() {
        let zh = MandarinFrontend::new();
        let ps = zh.phonemize("我喜欢Python编程😀").unwrap();
        assert!(ps.starts_with("wo↓ ɕi↓ xwan"), "{ps}");
        assert!(ps.contains("pˈIθɑn") || ps.contains("pˈIθən"), "{ps}");
        assert!(!ps.contains('😀'), "{ps}");
        assert_eq!(zh.phonemize("😀🎉").unwrap(), "");
    }
}
