//! Sentence divider: text deltas in, one [`SentenceDraft`] per sentence out, as early as possible.
//!
//! The divider is an incremental scanner over a buffer holding the sentence in progress. Every decision it
//! makes is a pure function of the text seen so far; when a decision needs characters that have not arrived
//! yet (is this `.` a decimal point? does a lowercase word follow this `etc.`?) it stops and resumes at the
//! same place on the next delta, without touching its state. That is what makes the output independent of
//! how the model's text happens to be chunked (checked by the proptests), and it also means a sentence is
//! emitted the moment its end is certain, never one sentence late.
//!
//! Rules, in short:
//! - terminators `. ! ? …` (and runs like `?!`, `...`), CJK `。！？；`, and every newline end a sentence;
//! - closing quotes/brackets (and emphasis marks, glued emoji) right after a terminator belong to the
//!   sentence;
//! - no split inside quotes/brackets (reset at a newline so one stray `"` cannot swallow a paragraph),
//!   inside inline code spans, or inside fenced code blocks (a fenced block is always a draft of its own);
//! - `.` directly followed by a non-space (`3.14`, `e.g`, `example.com/a.b`) never splits, `,` directly
//!   followed by a digit (`1,000`) never cuts, known abbreviations and list markers (`1. `) do not split;
//! - a terminator closed by a quote (`"Hi!" she said`) or an ellipsis followed by a lowercase word
//!   continues the sentence;
//! - first-clause fast path: until the first sentence with words has been emitted, a `,`/`，`/`、` after at
//!   least [`FAST_PATH_MIN_WORDS`] Latin words or [`FAST_PATH_MIN_CJK`] CJK characters cuts early, so TTS
//!   can start speaking while the model is still writing. `<think>` content and `[tags]` do not count.
//!
//! Emitted text is trimmed; whitespace between sentences is dropped and whitespace-only sentences are not
//! emitted. Each emitted `raw` is otherwise an exact substring of the input.

use super::display::TagState;
use super::tts_filter::is_pictograph;
use super::{PipelineItem, SentenceDraft, Stage};

/// Latin words a first clause needs before the fast path may cut it at a comma.
pub const FAST_PATH_MIN_WORDS: usize = 4;
/// CJK characters a first clause needs before the fast path may cut it at a comma.
pub const FAST_PATH_MIN_CJK: usize = 6;

/// What usually follows a sentence's end: a space and a capital.
const NEXT_SENTENCE: &str = " A";

/// Abbreviations that are (practically) never the end of a sentence: titles precede a name, the rest
/// introduce something. Case-sensitive so that `ms.` (milliseconds) can still end a sentence.
const ALWAYS_CONTINUE: &[&str] = &[
    "Mr", "Mrs", "Ms", "Mx", "Dr", "Prof", "St", "Mt", "Sen", "Rep", "Gen", "Capt", "Fig", "fig",
    "vs", "Vs", "e.g", "E.g", "i.e", "I.e", "cf", "Cf", "approx", "Approx", "viz",
];

/// Abbreviations that often end a sentence too: they continue it only when a lowercase word follows.
/// Compared lowercased. Dotted acronyms (`U.S.`, `a.m.`) are handled generically.
const CONTINUE_IF_LOWER: &[&str] = &[
    "etc", "jr", "sr", "inc", "ltd", "co", "corp", "esp", "min", "max", "hrs", "dept", "est",
    "misc",
];

/// Closing characters absorbed into a sentence after its terminator even when no opener was seen.
/// The straight `"` is not here: at depth zero it is ambiguous and treated as an opener.
const CLOSERS: &[char] = &[')', ']', '”', '’', '」', '』', '）', '»', '》', '】', '〉'];

/// What kind of terminator a sentence candidate ends with; each kind has its own continuation rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A single `.`.
    Period,
    /// `..`, `...`, `…` and mixes.
    Ellipsis,
    /// `!`, `?` and runs such as `?!`.
    Bang,
    /// Full-width CJK terminators, which need no following space.
    Cjk,
}

/// Result of looking at the text after a terminator.
enum Verdict {
    /// The text so far is not enough to decide; wait for the next delta.
    More,
    /// The sentence ends at this byte index.
    Split(usize),
    /// Not a sentence end; keep scanning from this byte index.
    Continue(usize),
}

/// A character at a byte index, the true end of the stream, or "not arrived yet".
enum Peek {
    Char(char),
    End,
    More,
}

fn peek(buf: &str, i: usize, eof: bool) -> Peek {
    match buf.get(i..).and_then(|s| s.chars().next()) {
        Some(c) => Peek::Char(c),
        None if eof => Peek::End,
        None => Peek::More,
    }
}

/// End of the run of characters satisfying `pred` starting at `i`; `None` if the run may continue in
/// text that has not arrived yet.
fn run_end(buf: &str, i: usize, eof: bool, pred: impl Fn(char) -> bool) -> Option<usize> {
    let mut end = i;
    for c in buf[i..].chars() {
        if !pred(c) {
            return Some(end);
        }
        end += c.len_utf8();
    }
    eof.then_some(end)
}

pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F // CJK punctuation
        | 0x3040..=0x30FF // kana
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF // ideographs
        | 0xAC00..=0xD7AF // hangul
        | 0xFF00..=0xFFEF) // full-width forms
}

fn is_cjk_terminator(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '；' | '｡')
}

fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '…' | '!' | '?' | '‽') || is_cjk_terminator(c)
}

fn closer_for(c: char) -> Option<char> {
    Some(match c {
        '(' => ')',
        '[' => ']',
        '“' => '”',
        '「' => '」',
        '『' => '』',
        '（' => '）',
        '«' => '»',
        '《' => '》',
        '【' => '】',
        '"' => '"',
        _ => return None,
    })
}

/// ASCII and full-width digits.
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || ('０'..='９').contains(&c)
}

/// Counts Latin words and CJK characters outside `[tags]` and `*narration*`; used for the fast-path
/// threshold and to tell a sentence with words from a tag-only or narration-only one (which must not use up
/// the fast path: the first *spoken* clause is the one to hurry).
pub(crate) fn clause_weight(s: &str) -> (usize, usize) {
    let (mut words, mut cjk, mut in_word, mut in_tag) = (0, 0, false, false);
    let mut in_star = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => (in_tag, in_word) = (true, false),
            ']' => in_tag = false,
            // A lone `*` opens or closes narration; `**` is emphasis and counts.
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
            }
            '*' => (in_star, in_word) = (!in_star, false),
            _ if in_tag || in_star => {}
            _ if is_cjk(c) => {
                cjk += usize::from(c.is_alphanumeric());
                in_word = false;
            }
            _ if c.is_alphanumeric() => {
                words += usize::from(!in_word);
                in_word = true;
            }
            // Apostrophes and hyphens keep a word together ("don't", "re-use").
            _ if c.is_whitespace() => in_word = false,
            _ => {}
        }
    }
    (words, cjk)
}

/// The word right before byte index `end`, without leading quotes/brackets.
fn word_before(buf: &str, end: usize) -> &str {
    let head = &buf[..end];
    let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    head[start..].trim_start_matches(|c: char| !c.is_alphanumeric())
}

/// `U.S`, `a.m`, `e.g`: single letters separated by dots (the final dot is the terminator candidate).
fn is_dotted_acronym(word: &str) -> bool {
    word.contains('.')
        && word
            .split('.')
            .all(|p| p.chars().count() == 1 && p.chars().all(char::is_alphabetic))
}

/// Characters after a terminator that still belong to its sentence: closers, the end of markdown
/// emphasis (`**Note.** Next`) and emoji glued to the sentence (`Great!🎉 Next`).
fn trails_terminator(c: char) -> bool {
    CLOSERS.contains(&c) || c == '*' || c == '_' || is_pictograph(c)
}

/// Continue iff the next non-blank character on the same line is lowercase.
fn lowercase_rule(buf: &str, end: usize, eof: bool) -> Verdict {
    let Some(i) = run_end(buf, end, eof, |c| c.is_whitespace() && c != '\n') else {
        return Verdict::More;
    };
    match peek(buf, i, eof) {
        Peek::More => Verdict::More,
        Peek::Char(c) if c.is_lowercase() => Verdict::Continue(end),
        _ => Verdict::Split(end),
    }
}

/// Decides whether a terminator of `kind` spanning `start..term_end` ends the sentence. `quoted` means
/// the terminator sat inside quotes/brackets that have just closed at `term_end`.
fn decide(
    buf: &str,
    start: usize,
    term_end: usize,
    kind: Kind,
    quoted: bool,
    eof: bool,
) -> Verdict {
    let Some(end) = run_end(buf, term_end, eof, trails_terminator) else {
        return Verdict::More;
    };
    let next = match peek(buf, end, eof) {
        Peek::More => return Verdict::More,
        Peek::End => return Verdict::Split(end),
        Peek::Char(c) => c,
    };
    if kind == Kind::Cjk || next == '\n' || is_cjk(next) {
        return Verdict::Split(end);
    }
    if !next.is_whitespace() {
        // `3.14`, `e.g`, `example.com/a.b`, `?q=1`, `wait...what`: mid-token punctuation.
        return Verdict::Continue(end);
    }
    if quoted || kind != Kind::Period {
        return match kind {
            // A bare `!`/`?` followed by a space always ends the sentence.
            Kind::Bang if !quoted => Verdict::Split(end),
            _ => lowercase_rule(buf, end, eof),
        };
    }
    let word = word_before(buf, start);
    let list_marker =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) && buf[..start].trim() == word;
    if list_marker || ALWAYS_CONTINUE.contains(&word) {
        return Verdict::Continue(end);
    }
    if CONTINUE_IF_LOWER.contains(&word.to_lowercase().as_str()) || is_dotted_acronym(word) {
        return lowercase_rule(buf, end, eof);
    }
    Verdict::Split(end)
}

/// Kind of the terminator right before byte index `i`, skipping closers and straight quotes.
fn terminator_before(buf: &str, i: usize) -> Option<(Kind, usize)> {
    let head = buf[..i].trim_end_matches(|c: char| CLOSERS.contains(&c) || c == '"');
    let mut rev = head.chars().rev();
    let last = rev.next()?;
    let kind = match last {
        '.' if rev.next() == Some('.') => Kind::Ellipsis,
        '.' => Kind::Period,
        '…' => Kind::Ellipsis,
        '!' | '?' | '‽' => Kind::Bang,
        c if is_cjk_terminator(c) => Kind::Cjk,
        _ => return None,
    };
    Some((kind, head.len() - last.len_utf8()))
}

/// Pipeline stage 1: divides streamed text into sentences. See the module docs for the rules.
#[derive(Debug, Clone)]
pub struct SentenceDivider {
    /// The sentence in progress (plus lookahead); everything before it has been emitted.
    buf: String,
    /// Byte index in `buf` up to which decisions have been made.
    pos: usize,
    /// Expected closers of the open quotes/brackets, innermost last.
    stack: Vec<char>,
    /// Length of the backtick run that opened the inline code span we are in, 0 outside code.
    code_run: usize,
    in_fence: bool,
    fast_path: bool,
    /// The fast path applies until the first sentence with words has been emitted.
    fast_path_armed: bool,
    /// Whether the emitted text left us inside `<think>`; reasoning is neither cut early nor counts as the
    /// first sentence. Only tracked while the fast path is armed.
    think: TagState,
}

impl SentenceDivider {
    pub fn new(first_clause_fast_path: bool) -> Self {
        Self {
            buf: String::new(),
            pos: 0,
            stack: Vec::new(),
            code_run: 0,
            in_fence: false,
            fast_path: first_clause_fast_path,
            fast_path_armed: first_clause_fast_path,
            think: TagState::default(),
        }
    }

    /// Emits `buf[..end]` (trimmed, if not blank) and drops it from the buffer.
    fn emit(&mut self, end: usize, out: &mut Vec<PipelineItem>) {
        let text = self.buf[..end].trim();
        if !text.is_empty() {
            if self.fast_path_armed && clause_weight(&self.think.process(text, false)) != (0, 0) {
                self.fast_path_armed = false;
            }
            out.push(PipelineItem::Draft(SentenceDraft::new(text)));
        }
        self.buf.drain(..end);
        self.pos = 0;
    }

    /// Makes every decision the buffered text allows. With `eof`, the end of the buffer is the end of
    /// the stream, so no decision has to wait.
    fn scan(&mut self, eof: bool, out: &mut Vec<PipelineItem>) {
        while let Some(c) = self.buf[self.pos..].chars().next() {
            let decided = if self.in_fence {
                self.step_fence(c, eof, out)
            } else if self.code_run > 0 {
                self.step_code(c, eof, out)
            } else {
                self.step_text(c, eof, out)
            };
            if !decided {
                return;
            }
        }
    }

    /// Inside a fenced block only a closing fence matters; it ends the block's draft.
    fn step_fence(&mut self, c: char, eof: bool, out: &mut Vec<PipelineItem>) -> bool {
        let pos = self.pos;
        if c != '`' {
            // Skip straight to the next backtick: code blocks can be long.
            self.pos = self.buf[pos..]
                .find('`')
                .map_or(self.buf.len(), |i| pos + i);
            return true;
        }
        let Some(end) = run_end(&self.buf, pos, eof, |c| c == '`') else {
            return false;
        };
        if end - pos >= 3 {
            self.in_fence = false;
            self.emit(end, out);
        } else {
            self.pos = end;
        }
        true
    }

    /// Inside an inline code span nothing splits; a newline ends the span too (an unclosed backtick is
    /// far more likely a typo than a multi-line span, and must not suppress splitting for long).
    fn step_code(&mut self, c: char, eof: bool, out: &mut Vec<PipelineItem>) -> bool {
        let pos = self.pos;
        match c {
            '`' => {
                let Some(end) = run_end(&self.buf, pos, eof, |c| c == '`') else {
                    return false;
                };
                if end - pos == self.code_run {
                    self.code_run = 0;
                }
                self.pos = end;
            }
            '\n' => {
                self.code_run = 0;
                self.stack.clear();
                self.emit(pos + 1, out);
            }
            _ => self.pos += c.len_utf8(),
        }
        true
    }

    fn step_text(&mut self, c: char, eof: bool, out: &mut Vec<PipelineItem>) -> bool {
        let pos = self.pos;
        let after = pos + c.len_utf8();
        match c {
            '`' => {
                let Some(end) = run_end(&self.buf, pos, eof, |c| c == '`') else {
                    return false;
                };
                if end - pos >= 3 {
                    // A fenced block becomes a draft of its own, so later stages can treat it as a unit.
                    self.emit(pos, out);
                    self.in_fence = true;
                    self.pos = end - pos;
                } else {
                    self.code_run = end - pos;
                    self.pos = end;
                }
            }
            '\n' => {
                // Quotes do not span lines here: a stray quote must not suppress splitting for long.
                self.stack.clear();
                self.emit(after, out);
            }
            _ if is_terminator(c) && self.stack.is_empty() => {
                let (kind, pred): (Kind, fn(char) -> bool) = match c {
                    '.' | '…' => (Kind::Ellipsis, |c| c == '.' || c == '…'),
                    '!' | '?' | '‽' => (Kind::Bang, |c| matches!(c, '!' | '?' | '‽')),
                    _ => (Kind::Cjk, |c| {
                        is_cjk_terminator(c) || matches!(c, '!' | '?')
                    }),
                };
                let Some(term_end) = run_end(&self.buf, pos, eof, pred) else {
                    return false;
                };
                let kind = if c == '.' && term_end == after {
                    Kind::Period
                } else {
                    kind
                };
                return self.apply(decide(&self.buf, pos, term_end, kind, false, eof), out);
            }
            _ if self.stack.last() == Some(&c) && !self.is_emoticon(pos) => {
                if self.stack.len() == 1
                    && let Some((kind, start)) = terminator_before(&self.buf, pos)
                {
                    let verdict = decide(&self.buf, start, after, kind, true, eof);
                    if matches!(verdict, Verdict::More) {
                        return false;
                    }
                    self.stack.pop();
                    return self.apply(verdict, out);
                }
                self.stack.pop();
                self.pos = after;
            }
            _ if closer_for(c).is_some() && !self.is_emoticon(pos) => {
                self.stack.extend(closer_for(c));
                self.pos = after;
            }
            ',' | '，' | '、' if self.fast_path_armed && self.stack.is_empty() => {
                let mut think = self.think.clone();
                let (words, cjk) = clause_weight(&think.process(&self.buf[..pos], false));
                if think.in_think || words < FAST_PATH_MIN_WORDS && cjk < FAST_PATH_MIN_CJK {
                    self.pos = after;
                    return true;
                }
                // An ASCII comma needs a following space: `1,000` is a number, not a clause. A full-width
                // one is a clause mark unless a digit follows (`１，０００` is a number too).
                let cut = match peek(&self.buf, after, eof) {
                    Peek::More => return false,
                    Peek::End => true,
                    Peek::Char(n) if c == ',' => n.is_whitespace(),
                    Peek::Char(n) => !is_digit(n),
                };
                if cut {
                    self.emit(after, out);
                } else {
                    self.pos = after;
                }
            }
            _ => self.pos = after,
        }
        true
    }

    /// `:(` and `;)` are faces, not brackets.
    fn is_emoticon(&self, pos: usize) -> bool {
        matches!(self.buf[..pos].chars().next_back(), Some(':' | ';'))
    }

    fn apply(&mut self, verdict: Verdict, out: &mut Vec<PipelineItem>) -> bool {
        match verdict {
            Verdict::More => return false,
            Verdict::Split(end) => self.emit(end, out),
            Verdict::Continue(end) => self.pos = end,
        }
        true
    }

    /// The sentence that ends where the text stops, when only the characters still to come can say
    /// whether it does (`Of course!` waits for the next delta: `!!`, a closing quote or ` It`?): the
    /// draft the divider would emit if the next sentence began (` A`). `None` when the buffered text
    /// does not stop at a sentence end (or at the first clause's comma), or would not end there even
    /// then (`Dr.`). For starting speech synthesis early; the real draft may still differ.
    pub fn sentence_if_ended(&self) -> Option<SentenceDraft> {
        let tail = self.buf.trim_end();
        let last = tail.chars().next_back()?;
        let at_end = terminator_before(&self.buf, tail.len()).is_some()
            || self.fast_path_armed && matches!(last, ',' | '，' | '、');
        if !at_end {
            return None;
        }
        let mut probe = self.clone();
        probe.buf.push_str(NEXT_SENTENCE);
        let mut out = Vec::new();
        probe.scan(false, &mut out);
        out.into_iter().find_map(|item| match item {
            PipelineItem::Draft(draft) => Some(draft),
            _ => None,
        })
    }

    /// Emits everything buffered, deciding as if the stream ended here.
    fn flush(&mut self, out: &mut Vec<PipelineItem>) {
        self.scan(true, out);
        self.emit(self.buf.len(), out);
        self.stack.clear();
        self.code_run = 0;
        self.in_fence = false;
    }
}

impl Stage for SentenceDivider {
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>) {
        match item {
            PipelineItem::Text(delta) => {
                self.buf.push_str(&delta);
                self.scan(false, out);
            }
            other => {
                // Anything else (tool calls, ready-made drafts) marks a break in the text: what was said
                // before it must come out before it.
                self.flush(out);
                out.push(other);
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<PipelineItem>) {
        self.flush(out);
        self.fast_path_armed = self.fast_path;
        self.think = TagState::default();
    }
}

#[cfg(test)]
#[path = "divider_tests.rs"]
mod tests;
