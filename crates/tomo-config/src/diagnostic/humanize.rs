//! Turns serde's Rust-flavoured messages ("invalid type: string \"hot\", expected f32") into ones a
//! profile author can act on ("expected a number, found a string"), and suggests near-miss names.

/// What a serde error was about, after rewording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reworded {
    /// `missing field `name``: the field is absent from its table.
    MissingField(String),
    /// `unknown field `x``: a key a `deny_unknown_fields` table does not accept.
    UnknownField {
        key: String,
        message: String,
    },
    Other(String),
}

pub(crate) fn reword(message: &str) -> Reworded {
    if let Some(name) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return Reworded::MissingField(name.to_owned());
    }
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((key, tail)) = rest.split_once('`')
    {
        let expected = backticked(tail);
        let mut message = format!("unknown key `{key}`");
        if let Some(hint) = did_you_mean(key, expected.iter().map(String::as_str)) {
            message.push_str(&format!(" (did you mean `{hint}`?)"));
        }
        if !expected.is_empty() {
            message.push_str(&format!("; expected one of {}", quoted_list(&expected)));
        }
        return Reworded::UnknownField {
            key: key.to_owned(),
            message,
        };
    }
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((value, tail)) = rest.split_once('`')
    {
        let expected = backticked(tail);
        let mut out = format!(
            "unknown value `{value}`, expected one of {}",
            quoted_list(&expected)
        );
        if let Some(hint) = did_you_mean(value, expected.iter().map(String::as_str)) {
            out.push_str(&format!(" (did you mean `{hint}`?)"));
        }
        return Reworded::Other(out);
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((found, expected)) = rest.rsplit_once(", expected ")
        {
            let found = if prefix == "invalid type: " {
                describe_found(found)
            } else {
                found_value(found)
            };
            return Reworded::Other(format!(
                "expected {}, found {found}",
                describe_expected(expected)
            ));
        }
    }
    Reworded::Other(message.to_owned())
}

/// The closest of `candidates` to `word`, if it is close enough to be a plausible typo.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word_lower = word.to_lowercase();
    // A third of the length (at least 1) catches transpositions and a dropped letter without
    // suggesting unrelated short words.
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| {
            let c_lower = c.to_lowercase();
            let mut d = edit_distance(&word_lower, &c_lower);
            // A key with its unit or qualifier left off (`timeout` for `timeout_secs`) is a near miss
            // too, however many characters are missing.
            let (short, long) = if word_lower.len() < c_lower.len() {
                (&word_lower, &c_lower)
            } else {
                (&c_lower, &word_lower)
            };
            if short.len() >= 3 && long.starts_with(short.as_str()) {
                d = d.min(1);
            }
            (d, c)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions ("temprature" is one
/// deletion, "tempreature" one transposition from "temperature").
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// All `…`-quoted words in `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn quoted_list(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// serde's `Unexpected` rendering ("string \"hot\"", "integer `5`") → a TOML kind.
fn describe_found(found: &str) -> String {
    let kind = found.split([' ', '`', '"']).next().unwrap_or(found);
    match kind {
        "string" | "char" => "a string",
        "integer" => "an integer",
        "floating" => "a float",
        "boolean" => "a boolean",
        "sequence" => "an array",
        "map" => "a table",
        _ => return found.to_owned(),
    }
    .to_owned()
}

/// For "invalid value" the kind is right but the value is not: show the value ("-1").
fn found_value(found: &str) -> String {
    match found.split_once(' ') {
        Some((_, value)) if value.starts_with('`') || value.starts_with('"') => value.to_owned(),
        _ => found.to_owned(),
    }
}

/// serde's `Expected` rendering ("f32", "a sequence", "struct LlmConfig") → TOML terms.
fn describe_expected(expected: &str) -> String {
    match expected {
        "f32" | "f64" => "a number",
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer",
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer",
        "a string" | "string" | "a borrowed string" | "path string" => "a string",
        "a boolean" => "a boolean (true or false)",
        "a sequence" => "an array",
        "a map" => "a table",
        e if e.starts_with("struct ") => "a table",
        e => return e.to_owned(),
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewords_type_errors() {
        assert_eq!(
            reword("invalid type: string \"hot\", expected f32"),
            Reworded::Other("expected a number, found a string".into())
        );
        assert_eq!(
            reword("invalid value: integer `-1`, expected u32"),
            Reworded::Other("expected a non-negative integer, found `-1`".into())
        );
        assert_eq!(
            reword("invalid type: integer `3`, expected a sequence"),
            Reworded::Other("expected an array, found an integer".into())
        );
        assert_eq!(
            reword("missing field `model`"),
            Reworded::MissingField("model".into())
        );
    }

    #[test]
    fn rewords_unknown_variant_with_hint() {
        assert_eq!(
            reword("unknown variant `toool`, expected one of `hook`, `tool`"),
            Reworded::Other(
                "unknown value `toool`, expected one of `hook`, `tool` (did you mean `tool`?)"
                    .into()
            )
        );
    }

    #[test]
    fn suggests_close_names_only() {
        let keys = ["temperature", "model", "max_tokens"];
        assert_eq!(did_you_mean("temprature", keys), Some("temperature"));
        assert_eq!(did_you_mean("tempreature", keys), Some("temperature"));
        assert_eq!(did_you_mean("modle", keys), Some("model"));
        assert_eq!(did_you_mean("max_token", keys), Some("max_tokens"));
        assert_eq!(
            did_you_mean("timeout", ["timeout_secs", "retries"]),
            Some("timeout_secs")
        );
        assert_eq!(did_you_mean("voice", keys), None);
        assert_eq!(did_you_mean("model", keys), None);
    }
}
