//! One pinyin syllable (tone number at the end, `ü` as is: `zhong1`, `lüe4`, `de` for the neutral tone) →
//! Kokoro's Mandarin phoneme symbols.
//!
//! Kokoro v1.0's Mandarin voices were trained on the IPA that misaki's zh front end derives from pinyin:
//! aspiration as `ʰ`, the retroflex affricate as the single letter `ꭧ`, the apical vowel of `zhi`/`zi` as
//! `ɨ`, glides `j`/`w`/`ɥ` before the nucleus, and the tone as an arrow after the vowel (before a nasal coda):
//! 1 `→`, 2 `↗`, 3 `↓`, 4 `↘`, neutral nothing. `hao3` → `xau↓`, `zhong1` → `ꭧʊ→ŋ`, `xue2` → `ɕɥe↗`.

/// Initials, two-letter ones first so `zh` wins over `z`.
const INITIALS: [(&str, &str); 21] = [
    ("zh", "ꭧ"),
    ("ch", "ꭧʰ"),
    ("sh", "ʂ"),
    ("b", "p"),
    ("p", "pʰ"),
    ("m", "m"),
    ("f", "f"),
    ("d", "t"),
    ("t", "tʰ"),
    ("n", "n"),
    ("l", "l"),
    ("g", "k"),
    ("k", "kʰ"),
    ("h", "x"),
    ("j", "ʨ"),
    ("q", "ʨʰ"),
    ("x", "ɕ"),
    ("r", "ɻ"),
    ("z", "ʦ"),
    ("c", "ʦʰ"),
    ("s", "s"),
];

/// A final as (glide + nucleus, coda): the tone goes between the two.
fn final_parts(final_: &str) -> Option<(&'static str, &'static str)> {
    Some(match final_ {
        "a" => ("a", ""),
        "ai" => ("ai", ""),
        "an" => ("a", "n"),
        "ang" => ("a", "ŋ"),
        "ao" => ("au", ""),
        "e" => ("ɤ", ""),
        "ei" => ("ei", ""),
        "en" => ("ə", "n"),
        "eng" => ("ə", "ŋ"),
        "i" => ("i", ""),
        "ia" => ("ja", ""),
        "ian" => ("jɛ", "n"),
        "iang" => ("ja", "ŋ"),
        "iao" => ("jau", ""),
        "ie" => ("je", ""),
        "in" => ("i", "n"),
        "iou" => ("jou", ""),
        "ing" => ("i", "ŋ"),
        "iong" => ("jʊ", "ŋ"),
        "ong" => ("ʊ", "ŋ"),
        "ou" => ("ou", ""),
        "u" => ("u", ""),
        "uei" => ("wei", ""),
        "ua" => ("wa", ""),
        "uai" => ("wai", ""),
        "uan" => ("wa", "n"),
        "uen" => ("wə", "n"),
        "uang" => ("wa", "ŋ"),
        "ueng" => ("wə", "ŋ"),
        "uo" | "o" => ("wo", ""),
        "ü" => ("y", ""),
        "üe" => ("ɥe", ""),
        "üan" => ("ɥɛ", "n"),
        "ün" => ("y", "n"),
        _ => return None,
    })
}

/// Syllables that are not initial + final: interjections and syllabic nasals.
fn whole_syllable(syllable: &str) -> Option<(&'static str, &'static str)> {
    Some(match syllable {
        "er" => ("ɚ", ""),
        "o" => ("ɔ", ""),
        "io" => ("jɔ", ""),
        "ê" => ("ɛ", ""),
        "m" => ("m", ""),
        "n" => ("n", ""),
        "ng" => ("ŋ", ""),
        "hm" => ("hm", ""),
        "hng" => ("hŋ", ""),
        _ => return None,
    })
}

fn tone_mark(tone: u8) -> &'static str {
    match tone {
        1 => "→",
        2 => "↗",
        3 => "↓",
        4 => "↘",
        _ => "",
    }
}

/// The final written after `y`/`w` (which are spelling, not sounds), in its full form.
fn final_after_glide_letter(letter: char, rest: &str) -> Option<String> {
    let full = match (letter, rest) {
        ('y', "i" | "in" | "ing") => rest.to_owned(),
        ('y', "u" | "ue" | "uan" | "un") => format!("ü{}", &rest[1..]),
        ('y', "ou") => "iou".to_owned(),
        ('y', _) => format!("i{rest}"),
        ('w', "u") => "u".to_owned(),
        ('w', "ei") => "uei".to_owned(),
        ('w', "en") => "uen".to_owned(),
        ('w', _) => format!("u{rest}"),
        _ => return None,
    };
    Some(full)
}

/// Kokoro phonemes of one pinyin syllable with its tone number (1-4; 5 or none for the neutral tone), or
/// `None` if it is not a Mandarin syllable.
pub fn syllable_to_ipa(pinyin: &str) -> Option<String> {
    let pinyin = pinyin.trim().to_lowercase().replace('v', "ü");
    let (base, tone) = match pinyin.char_indices().last() {
        Some((i, c)) if c.is_ascii_digit() => (&pinyin[..i], c.to_digit(10).unwrap_or(5) as u8),
        Some(_) => (pinyin.as_str(), 5),
        None => return None,
    };
    if base.is_empty() || !(1..=5).contains(&tone) {
        return None;
    }
    let tone = tone_mark(tone);
    if let Some((nucleus, coda)) = whole_syllable(base) {
        return Some(format!("{nucleus}{tone}{coda}"));
    }
    let (initial, rest) = INITIALS
        .iter()
        .find(|(spelling, _)| base.starts_with(spelling) && base.len() > spelling.len())
        .map_or(("", base), |(spelling, ipa)| {
            (*ipa, &base[spelling.len()..])
        });
    let spelled_initial = &base[..base.len() - rest.len()];
    let final_ = match rest.chars().next() {
        Some(letter @ ('y' | 'w')) if spelled_initial.is_empty() => {
            final_after_glide_letter(letter, &rest[1..])?
        }
        _ => match (spelled_initial, rest) {
            // ü is written u after j, q, x.
            ("j" | "q" | "x", r) if r.starts_with('u') => format!("ü{}", &r[1..]),
            // Contracted spellings.
            (_, "iu") => "iou".to_owned(),
            (_, "ui") => "uei".to_owned(),
            (i, "un") if !i.is_empty() => "uen".to_owned(),
            (_, r) => r.to_owned(),
        },
    };
    let (nucleus, coda) = match (spelled_initial, final_.as_str()) {
        // The apical vowels of zhi chi shi ri and zi ci si.
        ("zh" | "ch" | "sh" | "r" | "z" | "c" | "s", "i") => ("ɨ", ""),
        (_, f) => final_parts(f)?,
    };
    Some(format!("{initial}{nucleus}{tone}{coda}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipa(pinyin: &str) -> String {
        syllable_to_ipa(pinyin).unwrap_or_else(|| panic!("{pinyin} not parsed"))
    }

    #[test]
    fn initials_finals_and_tones() {
        assert_eq!(ipa("ni3"), "ni↓");
        assert_eq!(ipa("hao3"), "xau↓");
        assert_eq!(ipa("zhong1"), "ꭧʊ→ŋ");
        assert_eq!(ipa("guo2"), "kwo↗");
        assert_eq!(ipa("chi1"), "ꭧʰɨ→");
        assert_eq!(ipa("si4"), "sɨ↘");
        assert_eq!(ipa("qu4"), "ʨʰy↘");
        assert_eq!(ipa("xue2"), "ɕɥe↗");
        assert_eq!(ipa("juan4"), "ʨɥɛ↘n");
        assert_eq!(ipa("lüe4"), "lɥe↘");
        assert_eq!(ipa("nü3"), "ny↓");
        assert_eq!(ipa("de"), "tɤ");
        assert_eq!(ipa("ma5"), "ma");
    }

    #[test]
    fn y_and_w_are_spelling_and_contractions_expand() {
        assert_eq!(ipa("yi1"), "i→");
        assert_eq!(ipa("ye3"), "je↓");
        assert_eq!(ipa("you3"), "jou↓");
        assert_eq!(ipa("yu2"), "y↗");
        assert_eq!(ipa("yuan2"), "ɥɛ↗n");
        assert_eq!(ipa("yun4"), "y↘n");
        assert_eq!(ipa("ying1"), "i→ŋ");
        assert_eq!(ipa("yong3"), "jʊ↓ŋ");
        assert_eq!(ipa("wu3"), "u↓");
        assert_eq!(ipa("wei4"), "wei↘");
        assert_eq!(ipa("wen4"), "wə↘n");
        assert_eq!(ipa("wo3"), "wo↓");
        assert_eq!(ipa("liu2"), "ljou↗");
        assert_eq!(ipa("gui4"), "kwei↘");
        assert_eq!(ipa("lun2"), "lwə↗n");
        assert_eq!(ipa("jun1"), "ʨy→n");
    }

    #[test]
    fn interjections_and_syllabic_nasals() {
        assert_eq!(ipa("er4"), "ɚ↘");
        assert_eq!(ipa("n2"), "n↗");
        assert_eq!(ipa("ng2"), "ŋ↗");
        assert_eq!(ipa("o1"), "ɔ→");
        assert_eq!(ipa("bo1"), "pwo→");
        assert_eq!(ipa("a1"), "a→");
        assert_eq!(ipa("ang4"), "a↘ŋ");
    }

    #[test]
    fn non_syllables_are_refused() {
        for bad in ["", "3", "zh", "xyz1", "hello", "ma9"] {
            assert_eq!(syllable_to_ipa(bad), None, "{bad}");
        }
    }
}
