//! Word error rate: (substitutions + deletions + insertions) / reference words, after normalizing case and
//! punctuation, so "Hello, world." and "hello world" count as equal.

/// Lowercase words with punctuation removed (apostrophes inside words kept: "don't").
pub fn normalize_words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|word| {
            word.chars()
                .filter(|c| c.is_alphanumeric() || *c == '\'')
                .flat_map(char::to_lowercase)
                .collect::<String>()
                .trim_matches('\'')
                .to_string()
        })
        .filter(|word| !word.is_empty())
        .collect()
}

/// WER of `hypothesis` against `reference`. An empty reference gives 0 for an empty hypothesis, else 1.
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    edit_rate(&normalize_words(reference), &normalize_words(hypothesis))
}

/// Character error rate, for languages written without spaces (Chinese, Japanese): the edit distance over
/// letters and digits (punctuation and spaces removed, case folded) divided by the reference's count.
pub fn character_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let chars = |text: &str| -> Vec<char> {
        text.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    edit_rate(&chars(reference), &chars(hypothesis))
}

/// Levenshtein distance of `hypothesis` from `reference` over their units, divided by the reference's
/// length.
fn edit_rate<T: PartialEq>(reference: &[T], hypothesis: &[T]) -> f64 {
    if reference.is_empty() {
        return if hypothesis.is_empty() { 0.0 } else { 1.0 };
    }
    // Levenshtein distance over words, one row at a time.
    let mut previous: Vec<usize> = (0..=hypothesis.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut current = vec![i + 1; hypothesis.len() + 1];
        for (j, h) in hypothesis.iter().enumerate() {
            let substitution = previous[j] + usize::from(r != h);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[hypothesis.len()] as f64 / reference.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_after_normalization_is_zero() {
        assert_eq!(word_error_rate("Hello, world.", "hello world"), 0.0);
        assert_eq!(word_error_rate("Don't stop!", "don't stop"), 0.0);
    }

    #[test]
    fn counts_substitutions_deletions_insertions() {
        assert_eq!(word_error_rate("the cat sat", "the bat sat"), 1.0 / 3.0);
        assert_eq!(word_error_rate("the cat sat", "the sat"), 1.0 / 3.0);
        assert_eq!(
            word_error_rate("the cat sat", "the cat sat down"),
            1.0 / 3.0
        );
        assert_eq!(word_error_rate("a b", "c d e f"), 2.0);
    }

    #[test]
    fn character_error_rate_ignores_punctuation_and_spaces() {
        assert_eq!(character_error_rate("你好，世界。", "你好 世界"), 0.0);
        assert_eq!(
            character_error_rate("我有三个苹果", "我有山个苹果"),
            1.0 / 6.0
        );
        assert_eq!(character_error_rate("今天", ""), 1.0);
    }

    #[test]
    fn empty_inputs() {
        assert_eq!(word_error_rate("", ""), 0.0);
        assert_eq!(word_error_rate("", "noise"), 1.0);
        assert_eq!(word_error_rate("something", ""), 1.0);
    }
}
