//! Splitting text into the pieces engines work on: clauses (for espeak-ng, which drops punctuation that
//! Piper voices were trained with) and bounded chunks (for engines with an input limit).

/// Text up to and including the punctuation that ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Clause<'a> {
    /// The clause as written, punctuation included.
    pub text: &'a str,
    /// The ending punctuation in ASCII (CJK marks mapped to their Latin equivalent), if any.
    pub punct: Option<char>,
    /// `.`, `!`, `?` or the end of the text.
    pub ends_sentence: bool,
}

/// Latin equivalent of a clause-ending mark, or `None` if `c` does not end clauses.
fn clause_mark(c: char) -> Option<char> {
    match c {
        '.' | ',' | ';' | ':' | '!' | '?' => Some(c),
        '。' | '…' => Some('.'),
        '，' | '、' => Some(','),
        '；' => Some(';'),
        '：' => Some(':'),
        '！' => Some('!'),
        '？' => Some('?'),
        _ => None,
    }
}

/// Full-width marks end a clause even without a following space (CJK text has none).
fn is_full_width(c: char) -> bool {
    !c.is_ascii() && c != '…'
}

/// Closing quotes and brackets that belong to the clause before them (`He said "hi." Then…`).
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '}' | '”' | '’' | '」' | '』' | '）' | '»'
    )
}

/// Splits `text` at clause punctuation. A Latin mark only ends a clause when whitespace, a closer or the end
/// follows, so `3.14`, `a,b` and `example.com` stay whole. Clauses without any letter or digit are dropped.
pub(crate) fn clauses(text: &str) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let Some(mark) = clause_mark(c) else {
            continue;
        };
        // Consume the run of marks and closers that follows ("?!", "...", ".\"").
        let mut end = i + c.len_utf8();
        while let Some(&(j, next)) = chars.peek() {
            if clause_mark(next).is_some() || is_closer(next) {
                end = j + next.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let at_boundary = match chars.peek() {
            None => true,
            Some(&(_, next)) => {
                (next.is_whitespace() && !abbreviation(&text[i..end], &text[end..]))
                    || is_full_width(c)
            }
        };
        if at_boundary {
            push(&mut out, &text[start..end], Some(mark));
            start = end;
        }
    }
    push(&mut out, &text[start..], None);
    out
}

/// A single period followed by a lowercase word (`a.m. on`, `e.g. this`) marks an abbreviation, not a
/// sentence end; espeak-ng reads those itself. (An ellipsis before lowercase is still a pause.)
fn abbreviation(marks: &str, rest: &str) -> bool {
    marks == "."
        && rest
            .trim_start()
            .chars()
            .next()
            .is_some_and(char::is_lowercase)
}

fn push<'a>(out: &mut Vec<Clause<'a>>, text: &'a str, punct: Option<char>) {
    let text = text.trim();
    if !text.chars().any(char::is_alphanumeric) {
        return;
    }
    out.push(Clause {
        text,
        punct,
        ends_sentence: matches!(punct, None | Some('.' | '!' | '?')),
    });
}

/// Splits `text` into pieces of at most `max_chars` characters, preferring sentence ends, then clause ends,
/// then spaces; a single word longer than `max_chars` is cut at a character boundary.
pub(crate) fn chunks(text: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    for clause in clauses(text) {
        for piece in words_within(clause.text, max_chars) {
            let needed = if current.is_empty() {
                piece.chars().count()
            } else {
                current.chars().count() + 1 + piece.chars().count()
            };
            if needed > max_chars && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&piece);
        }
        if clause.ends_sentence && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `text` as pieces of at most `max_chars` characters, cut at whitespace where possible.
pub(crate) fn words_within(text: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > max_chars {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
                current_len = 0;
            }
            let rest = word.split_off(max_chars);
            out.push(word.into_iter().collect());
            word = rest;
        }
        let extra = if current.is_empty() {
            word.len()
        } else {
            word.len() + 1
        };
        if current_len + extra > max_chars && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            current_len = 0;
        }
        if !current.is_empty() {
            current.push(' ');
            current_len += 1;
        }
        current_len += word.len();
        current.extend(word);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<(&str, Option<char>, bool)> {
        clauses(text)
            .into_iter()
            .map(|c| (c.text, c.punct, c.ends_sentence))
            .collect()
    }

    #[test]
    fn splits_at_clause_punctuation_and_keeps_it() {
        assert_eq!(
            texts("Hello, world. How are you?! Fine; thanks: really"),
            [
                ("Hello,", Some(','), false),
                ("world.", Some('.'), true),
                ("How are you?!", Some('?'), true),
                ("Fine;", Some(';'), false),
                ("thanks:", Some(':'), false),
                ("really", None, true),
            ]
        );
    }

    #[test]
    fn decimals_urls_and_inner_commas_stay_whole() {
        assert_eq!(
            texts("Pi is 3.14, see example.com now."),
            [
                ("Pi is 3.14,", Some(','), false),
                ("see example.com now.", Some('.'), true),
            ]
        );
    }

    #[test]
    fn closing_quotes_belong_to_the_clause_and_ellipses_are_one_mark() {
        assert_eq!(
            texts("He said \"hi.\" Well... ok"),
            [
                ("He said \"hi.\"", Some('.'), true),
                ("Well...", Some('.'), true),
                ("ok", None, true),
            ]
        );
    }

    #[test]
    fn a_period_before_a_lowercase_word_is_an_abbreviation() {
        assert_eq!(
            texts("At 9:30 a.m. on Monday, e.g. today. Then"),
            [
                ("At 9:30 a.m. on Monday,", Some(','), false),
                ("e.g. today.", Some('.'), true),
                ("Then", None, true),
            ]
        );
    }

    #[test]
    fn cjk_marks_end_clauses_without_spaces() {
        assert_eq!(
            texts("你好，世界。再见"),
            [
                ("你好，", Some(','), false),
                ("世界。", Some('.'), true),
                ("再见", None, true),
            ]
        );
    }

    #[test]
    fn punctuation_only_and_empty_text_give_nothing() {
        assert!(texts("").is_empty());
        assert!(texts("  ... !? ").is_empty());
    }

    #[test]
    fn chunks_respect_the_limit_and_prefer_sentence_ends() {
        let text = "One two three. Four five six seven eight nine ten eleven.";
        let out = chunks(text, 20);
        assert!(out.iter().all(|c| c.chars().count() <= 20), "{out:?}");
        assert_eq!(out[0], "One two three.");
        assert_eq!(out.join(" "), text);
        // A word longer than the limit is cut rather than exceeding it.
        let long = chunks("abcdefghij", 4);
        assert_eq!(long, ["abcd", "efgh", "ij"]);
    }
}
