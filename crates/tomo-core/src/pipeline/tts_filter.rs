//! TTS filter: turns a draft's `tts_text` into what a speech engine should actually say, and finishes
//! the draft into a [`Sentence`].
//!
//! Removed: fenced code blocks (whole), markdown markup (emphasis, headings, list markers, block quotes,
//! images; links keep their text, inline code keeps its words), remaining HTML/XML tags, bare URLs, emoji
//! and pictographs, and stray symbols engines read out loud (`*`, `_`, `#`, `~`, `|`, `>`). Kept: words,
//! numbers (`3.14`, `1,000`), units and signs (`%`, `°C`, `$5`), `C#`, `C++`, apostrophes, punctuation.
//! Full-width letters, digits and `％` (`１２３`, `ＯＫ`) become ASCII, which every engine reads as numbers
//! and words; CJK punctuation stays (engines pause on it). Whitespace is collapsed. If no letter or digit is
//! left, `tts_text` is `None`: the sentence may still be displayed, but there is nothing to speak (never
//! `Some("")`).

use super::{PipelineItem, Stage};
use tomo_protocol::Sentence;

/// Longest `<…>` treated as a tag; anything longer is more likely a comparison in prose.
const MAX_TAG_LEN: usize = 200;

/// Makes `text` speakable; `None` when nothing speakable remains.
pub fn speakable(text: &str) -> Option<String> {
    let text = drop_fenced_code(text);
    let text = strip_line_markup(&text);
    let text = links_to_text(&text);
    let text = drop_tags_and_urls(&text);
    let text = strip_symbols(&text);
    let text = fold_full_width(&text);
    let text = tidy_whitespace(&text);
    text.chars().any(char::is_alphanumeric).then_some(text)
}

/// Fenced code is dropped entirely: read aloud it is noise (and long); the display still shows it.
fn drop_fenced_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        out.push_str(&rest[..open]);
        out.push(' ');
        let body = &rest[open + 3..];
        // Skip to the closing fence; an unclosed block runs to the end.
        rest = body
            .find("```")
            .map_or("", |close| &body[close + 3..])
            .trim_start_matches('`');
    }
    out.push_str(rest);
    out
}

/// Line-start markup: block quotes, headings, bullets, numbered list markers, horizontal rules.
fn strip_line_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut l = line.trim_start().trim_start_matches(['>', ' ']);
        if l.len() >= 3 && l.chars().all(|c| matches!(c, '-' | '*' | '_' | '=' | ' ')) {
            continue;
        }
        l = l.trim_start_matches('#').trim_start();
        for bullet in ["- ", "* ", "+ ", "• "] {
            if let Some(stripped) = l.strip_prefix(bullet) {
                l = stripped;
            }
        }
        let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if (1..=3).contains(&digits) {
            let after = &l[digits..];
            if let Some(item) = after
                .strip_prefix(". ")
                .or_else(|| after.strip_prefix(") "))
            {
                l = item;
            }
        }
        out.push_str(l);
    }
    out
}

/// `[text](url)` → `text`; `![alt](url)` → nothing (an image's alt text is a description, not speech).
fn links_to_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let link = after.find(']').and_then(|close| {
            let target = after[close + 1..].strip_prefix('(')?;
            let end = target.find(')')?;
            let label = &after[..close];
            let ok = !label.contains(['[', '\n']) && !target[..end].contains(char::is_whitespace);
            ok.then(|| (label, &target[end + 1..]))
        });
        match link {
            Some((label, tail)) => {
                let image = rest[..open].ends_with('!');
                out.push_str(if image {
                    &rest[..open - 1]
                } else {
                    &rest[..open]
                });
                if !image {
                    out.push_str(label);
                }
                rest = tail;
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_url_start(s: &str) -> bool {
    ["http://", "https://", "www."].iter().any(|p| {
        s.as_bytes()
            .get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p.as_bytes()))
    })
}

/// Removes `<tags>` (not `a < b`) and bare URLs (keeping sentence punctuation right after them).
fn drop_tags_and_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            let tag =
                rest[1..].starts_with(|n: char| n.is_ascii_alphabetic() || n == '/' || n == '!');
            let end = rest
                .find('>')
                .filter(|&e| tag && e <= MAX_TAG_LEN && !rest[1..e].contains(['<', '\n']));
            if let Some(e) = end {
                out.push(' ');
                rest = &rest[e + 1..];
                continue;
            }
        }
        let at_word_start =
            out.is_empty() || out.ends_with(|p: char| p.is_whitespace() || "([\"'“".contains(p));
        if at_word_start && is_url_start(rest) {
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let url = &rest[..len];
            let kept = url.trim_end_matches(['.', ',', '!', '?', ';', ':', ')', '"', '\'']);
            out.push_str(&url[kept.len()..]);
            rest = &rest[len..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Emoji, pictographs and their modifiers; symbols engines either read by name or choke on.
pub(crate) fn is_pictograph(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF // emoticons, pictographs, transport, flags, skin tones, …
        | 0x2600..=0x27BF // misc symbols, dingbats (☀ ✓ ❤)
        | 0x2B00..=0x2BFF // arrows and stars (⭐ ⬆)
        | 0x2190..=0x21FF // arrows
        | 0x2300..=0x23FF // misc technical (⌚ ⏰ ⏩)
        | 0x2500..=0x25FF // box drawing, blocks, geometric shapes (▶ ■)
        | 0xFE00..=0xFE0F // variation selectors
        | 0xE0000..=0xE007F // tag characters (subdivision flags)
        | 0x200D | 0x20E3 | 0x2022 | 0x3030 | 0x303D | 0x3297 | 0x3299)
}

/// Markdown emphasis and stray symbols, emoji, inline-code backticks.
fn strip_symbols(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let alnum = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        match c {
            '*' | '~' | '>' | '`' => {}
            '|' => out.push(' '),
            // snake_case reads better as two words; `__init__` and `_emphasis_` just lose the marks.
            '_' if alnum(prev) && alnum(next) => out.push(' '),
            '_' => {}
            // C#, F#: a letter before and no word after. Everything else (`#1`, `#tag`) loses the mark.
            '#' if prev.is_some_and(|p| p.is_ascii_alphabetic()) && !alnum(next) => out.push('#'),
            '#' => {}
            c if is_pictograph(c) => out.push(' '),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Full-width alphanumerics and `％` → ASCII; a full-width `．` between digits is a decimal point.
fn fold_full_width(text: &str) -> String {
    let ascii = |c: char| match c {
        '０'..='９' | 'Ａ'..='Ｚ' | 'ａ'..='ｚ' | '％' => char::from_u32(c as u32 - 0xFEE0),
        _ => None,
    };
    let chars: Vec<char> = text.chars().collect();
    let digit =
        |i: Option<&char>| i.is_some_and(|c| c.is_ascii_digit() || ('０'..='９').contains(c));
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            if c == '．' && i > 0 && digit(chars.get(i - 1)) && digit(chars.get(i + 1)) {
                '.'
            } else {
                ascii(c).unwrap_or(c)
            }
        })
        .collect()
}

/// Collapses whitespace runs to one space and removes spaces that removals left before punctuation.
fn tidy_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        let glue = word.starts_with([
            '.', ',', '!', '?', ';', ':', '…', '。', '，', '！', '？', '、', ')',
        ]);
        if !out.is_empty() && !glue {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Pipeline stage 4: finishes drafts into [`Sentence`]s.
#[derive(Debug, Clone, Default)]
pub struct TtsFilter {
    next_index: u32,
}

impl TtsFilter {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Stage for TtsFilter {
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>) {
        let PipelineItem::Draft(draft) = item else {
            out.push(item);
            return;
        };
        let display_text = draft.display_text.trim().to_owned();
        let tts_text = speakable(&draft.tts_text);
        if display_text.is_empty() && tts_text.is_none() && draft.actions.is_empty() {
            return;
        }
        out.push(PipelineItem::Sentence(Sentence {
            index: self.next_index,
            display_text,
            tts_text,
            actions: draft.actions,
            display_spans: draft.display_spans,
        }));
        self.next_index += 1;
    }

    fn finish(&mut self, _out: &mut Vec<PipelineItem>) {}
}

#[cfg(test)]
#[path = "tts_filter_tests.rs"]
mod tests;
