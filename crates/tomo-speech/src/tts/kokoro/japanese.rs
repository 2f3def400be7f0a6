//! Japanese for Kokoro: MeCab (Debian `mecab` with the IPA dictionary `mecab-ipadic-utf8`) gives each
//! word's pronunciation in katakana (`今日は` → キョー ワ: particles and long vowels as spoken), and each
//! kana becomes Kokoro's Japanese symbols as misaki's romanizer writes them (`ɕi`, `ʦɨ`, `ɸɯ`, `ɾʲi`,
//! `ː` for ー, `ʔ` for っ, ん assimilated to the next sound), one word per space.
//!
//! Open JTalk (the first idea) cannot be used here: its synthesizer refuses to run without an HTS
//! voice, Debian ships none, and its dictionary has no `dicrc` for the MeCab command.

use std::path::PathBuf;

use super::super::TtsError;
use super::super::cli;
use super::mandarin::fold_full_width;
use super::zh_numbers;

/// Debian's UTF-8 IPA dictionary; `TOMO_MECAB_DICT` points elsewhere.
const DEFAULT_DICT: &str = "/var/lib/mecab/dic/ipadic-utf8";

/// Single kana (hiragana) → phonemes.
#[rustfmt::skip]
const KANA: &[(char, &str)] = &[
    ('あ', "a"), ('い', "i"), ('う', "ɯ"), ('え', "e"), ('お', "o"),
    ('か', "ka"), ('き', "kʲi"), ('く', "kɯ"), ('け', "ke"), ('こ', "ko"),
    ('が', "ɡa"), ('ぎ', "ɡʲi"), ('ぐ', "ɡɯ"), ('げ', "ɡe"), ('ご', "ɡo"),
    ('さ', "sa"), ('し', "ɕi"), ('す', "sɨ"), ('せ', "se"), ('そ', "so"),
    ('ざ', "ʣa"), ('じ', "ʥi"), ('ず', "zɨ"), ('ぜ', "ʣe"), ('ぞ', "ʣo"),
    ('た', "ta"), ('ち', "ʨi"), ('つ', "ʦɨ"), ('て', "te"), ('と', "to"),
    ('だ', "da"), ('ぢ', "ʥi"), ('づ', "zɨ"), ('で', "de"), ('ど', "do"),
    ('な', "na"), ('に', "ɲi"), ('ぬ', "nɯ"), ('ね', "ne"), ('の', "no"),
    ('は', "ha"), ('ひ', "çi"), ('ふ', "ɸɯ"), ('へ', "he"), ('ほ', "ho"),
    ('ば', "ba"), ('び', "bʲi"), ('ぶ', "bɯ"), ('べ', "be"), ('ぼ', "bo"),
    ('ぱ', "pa"), ('ぴ', "pʲi"), ('ぷ', "pɯ"), ('ぺ', "pe"), ('ぽ', "po"),
    ('ま', "ma"), ('み', "mʲi"), ('む', "mɯ"), ('め', "me"), ('も', "mo"),
    ('や', "ja"), ('ゆ', "jɯ"), ('よ', "jo"),
    ('ら', "ɾa"), ('り', "ɾʲi"), ('る', "ɾɯ"), ('れ', "ɾe"), ('ろ', "ɾo"),
    ('わ', "βa"), ('ゐ', "i"), ('ゑ', "e"), ('を', "o"), ('ゔ', "vɯ"),
    ('ぁ', "a"), ('ぃ', "i"), ('ぅ', "ɯ"), ('ぇ', "e"), ('ぉ', "o"),
    ('ゃ', "ja"), ('ゅ', "jɯ"), ('ょ', "jo"), ('ゎ', "βa"),
];

/// Kana followed by a small kana, read as one mora.
#[rustfmt::skip]
const DIGRAPHS: &[(&str, &str)] = &[
    ("きゃ", "kʲa"), ("きゅ", "kʲɨ"), ("きょ", "kʲo"), ("きぇ", "kʲe"),
    ("ぎゃ", "ɡʲa"), ("ぎゅ", "ɡʲɨ"), ("ぎょ", "ɡʲo"),
    ("しゃ", "ɕa"), ("しゅ", "ɕɨ"), ("しょ", "ɕo"), ("しぇ", "ɕe"),
    ("じゃ", "ʥa"), ("じゅ", "ʥɨ"), ("じょ", "ʥo"), ("じぇ", "ʥe"),
    ("ちゃ", "ʨa"), ("ちゅ", "ʨɨ"), ("ちょ", "ʨo"), ("ちぇ", "ʨe"),
    ("ぢゃ", "ʥa"), ("ぢゅ", "ʥɨ"), ("ぢょ", "ʥo"),
    ("にゃ", "ɲa"), ("にゅ", "ɲɨ"), ("にょ", "ɲo"), ("にぇ", "ɲe"),
    ("ひゃ", "ça"), ("ひゅ", "çɨ"), ("ひょ", "ço"), ("ひぇ", "çe"),
    ("びゃ", "bʲa"), ("びゅ", "bʲɨ"), ("びょ", "bʲo"),
    ("ぴゃ", "pʲa"), ("ぴゅ", "pʲɨ"), ("ぴょ", "pʲo"),
    ("みゃ", "mʲa"), ("みゅ", "mʲɨ"), ("みょ", "mʲo"),
    ("りゃ", "ɾʲa"), ("りゅ", "ɾʲɨ"), ("りょ", "ɾʲo"),
    ("ふぁ", "ɸa"), ("ふぃ", "ɸʲi"), ("ふぇ", "ɸe"), ("ふぉ", "ɸo"), ("ふゅ", "ɸʲɨ"),
    ("てぃ", "tʲi"), ("てゅ", "tʲɨ"), ("でぃ", "dʲi"), ("でゅ", "dʲɨ"),
    ("とぅ", "tɯ"), ("どぅ", "dɯ"),
    ("うぃ", "βi"), ("うぇ", "βe"), ("うぉ", "βo"), ("いぇ", "je"),
    ("つぁ", "ʦa"), ("つぃ", "ʦʲi"), ("つぇ", "ʦe"), ("つぉ", "ʦo"),
    ("くぁ", "kᵝa"), ("ぐぁ", "ɡᵝa"),
    ("ゔぁ", "va"), ("ゔぃ", "vʲi"), ("ゔぇ", "ve"), ("ゔぉ", "vo"),
];

fn is_small(c: char) -> bool {
    matches!(
        c,
        'ぁ' | 'ぃ' | 'ぅ' | 'ぇ' | 'ぉ' | 'ゃ' | 'ゅ' | 'ょ' | 'ゎ'
    )
}

fn kana(c: char) -> Option<&'static str> {
    KANA.iter().find(|(k, _)| *k == c).map(|(_, p)| *p)
}

fn katakana_to_hiragana(text: &str) -> String {
    text.chars()
        .map(|c| match c as u32 {
            0x30A1..=0x30F6 => char::from_u32(c as u32 - 0x60).unwrap_or(c),
            _ => c,
        })
        .collect()
}

/// Kokoro's mark for Japanese punctuation, if `c` is some.
fn punctuation(c: char) -> Option<&'static str> {
    Some(match c {
        '。' | '.' | '｡' => ".",
        '、' | ',' | '，' => ",",
        '？' | '?' => "?",
        '！' | '!' => "!",
        '：' | ':' => ":",
        '；' | ';' => ";",
        '「' | '『' | '“' => "“",
        '」' | '』' | '”' => "”",
        '（' | '(' => "(",
        '）' | ')' => ")",
        '…' => "…",
        '〜' | '～' | '—' => "—",
        _ => return None,
    })
}

/// Phonemes of a word's pronunciation in hiragana.
pub fn kana_to_ipa(hira: &str) -> String {
    let chars: Vec<char> = hira.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if let Some(n) = next.filter(|n| is_small(*n)) {
            let pair: String = [c, n].iter().collect();
            if let Some((_, p)) = DIGRAPHS.iter().find(|(k, _)| *k == pair) {
                out.push_str(p);
                i += 2;
                continue;
            }
        }
        match c {
            'ー' => out.push('ː'),
            'っ' => out.push('ʔ'),
            'ん' => out.push_str(moraic_nasal(next.and_then(kana))),
            _ => {
                if let Some(p) = kana(c) {
                    out.push_str(p);
                }
            }
        }
        i += 1;
    }
    out
}

/// ん takes the place of articulation of what follows.
fn moraic_nasal(next: Option<&str>) -> &'static str {
    match next {
        Some(p) if p.starts_with(['m', 'p', 'b']) => "m",
        Some(p) if p.starts_with(['k', 'ɡ']) => "ŋ",
        Some(p) if p.starts_with(['ɲ', 'ʨ', 'ʥ']) => "ɲ",
        Some(p) if p.starts_with(['n', 't', 'd', 'ɾ', 'z', 'ʣ']) => "n",
        _ => "ɴ",
    }
}

/// Digits as kanji numerals, which MeCab reads (`320` → 三百二十, `3.5` → 三点五, `50%` → 五十パーセント).
fn numbers_as_kanji(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        out.push_str(&rest[..start]);
        let digits_end = rest[start..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(rest.len(), |n| start + n);
        // 两 is Chinese; Japanese counts with 二.
        out.push_str(&zh_numbers::integer(&rest[start..digits_end]).replace('两', "二"));
        rest = &rest[digits_end..];
        if let Some(after) = rest.strip_prefix('.')
            && after.starts_with(|c: char| c.is_ascii_digit())
        {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            out.push('点');
            out.push_str(&zh_numbers::digit_by_digit(&after[..end]));
            rest = &after[end..];
        }
        if let Some(after) = rest.strip_prefix('%') {
            out.push_str("パーセント");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Japanese text → Kokoro phonemes through MeCab.
#[derive(Debug, Clone)]
pub struct JapaneseFrontend {
    binary: PathBuf,
    dict: String,
}

impl JapaneseFrontend {
    /// Fails when `mecab` or its IPA dictionary is missing, naming the Debian packages.
    pub fn new() -> Result<Self, TtsError> {
        let dict = std::env::var("TOMO_MECAB_DICT").unwrap_or_else(|_| DEFAULT_DICT.to_owned());
        let frontend = Self {
            binary: PathBuf::from("mecab"),
            dict,
        };
        let missing = |why: String| {
            TtsError::VoiceMissing(format!(
                "MeCab with the IPA dictionary {} for Japanese (Debian packages `mecab`, \
                 `mecab-ipadic-utf8`): {why}",
                frontend.dict
            ))
        };
        if !std::path::Path::new(&frontend.dict)
            .join("sys.dic")
            .is_file()
        {
            return Err(missing("no sys.dic".into()));
        }
        frontend
            .words("テスト")
            .map_err(|e| missing(e.to_string()))?;
        Ok(frontend)
    }

    /// (surface, pronunciation in hiragana) of each word MeCab finds.
    fn words(&self, text: &str) -> Result<Vec<(String, String)>, TtsError> {
        let output = cli::run(
            &self.binary,
            "mecab",
            &["-d", &self.dict],
            Some(&format!("{}\n", text.replace(['\n', '\r'], " "))),
        )?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        Ok(stdout
            .lines()
            .filter(|line| *line != "EOS")
            .filter_map(|line| {
                let (surface, features) = line.split_once('\t')?;
                let fields: Vec<&str> = features.split(',').collect();
                // Pronunciation, else reading, else (unknown words) the surface itself.
                let pron = [fields.get(8), fields.get(7)]
                    .into_iter()
                    .flatten()
                    .find(|f| **f != "*" && !f.is_empty())
                    .map_or(surface, |f| *f);
                Some((surface.to_owned(), katakana_to_hiragana(pron)))
            })
            .collect())
    }

    pub fn phonemize(&self, text: &str) -> Result<String, TtsError> {
        let text = numbers_as_kanji(&fold_full_width(text));
        let mut out = String::new();
        for (surface, pron) in self.words(&text)? {
            let mut chars = surface.chars();
            if let (Some(c), None) = (chars.next(), chars.next())
                && let Some(mark) = punctuation(c)
            {
                out.truncate(out.trim_end().len());
                out.push_str(mark);
                out.push(' ');
                continue;
            }
            let word = if surface.is_ascii() {
                // Latin words stay as letters MeCab could not read: Kokoro has no English in this voice's
                // training, so they are left out rather than spelled.
                String::new()
            } else {
                kana_to_ipa(&pron)
            };
            if !word.is_empty() {
                out.push_str(&word);
                out.push(' ');
            }
        }
        // っ binds to the mora after it, across MeCab's word boundary (行っ た → iʔta).
        Ok(out.trim().replace("ʔ ", "ʔ"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kana_rows_digraphs_and_special_morae() {
        assert_eq!(kana_to_ipa("こんにちは"), "koɲɲiʨiha");
        assert_eq!(kana_to_ipa("きょー"), "kʲoː");
        assert_eq!(kana_to_ipa("しゃしん"), "ɕaɕiɴ");
        assert_eq!(kana_to_ipa("がっこー"), "ɡaʔkoː");
        assert_eq!(kana_to_ipa("さんぽ"), "sampo");
        assert_eq!(kana_to_ipa("りんご"), "ɾʲiŋɡo");
        assert_eq!(kana_to_ipa("ふぁいる"), "ɸaiɾɯ");
        assert_eq!(kana_to_ipa("つくえ"), "ʦɨkɯe");
        assert_eq!(katakana_to_hiragana("トーキョー"), "とーきょー");
    }

    #[test]
    fn numbers_become_kanji_numerals() {
        assert_eq!(numbers_as_kanji("320ページ"), "三百二十ページ");
        assert_eq!(numbers_as_kanji("2000円"), "二千円");
        assert_eq!(numbers_as_kanji("3.5キロ"), "三点五キロ");
        assert_eq!(numbers_as_kanji("50%"), "五十パーセント");
    }

    #[test]
    fn sentences_through_mecab() {
        let Ok(ja) = JapaneseFrontend::new() else {
            assert!(std::env::var_os("CI").is_none(), "mecab is missing");
            println!("skipped: mecab or mecab-ipadic-utf8 is missing");
            return;
        };
        assert_eq!(ja.phonemize("今日は。").unwrap(), "kʲoː βa.");
        let ps = ja.phonemize("東京に行った！").unwrap();
        assert_eq!(ps, "toːkʲoː ɲi iʔta!");
    }
}
