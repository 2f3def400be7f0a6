//! What the pause's words say about the end of the turn. Smart Turn hears only sound, and on synthesized
//! speech it tells finished from unfinished weakly: asked 288 ms into the silence it called half of the
//! paused-speech set's finished sentences "not done" (under 0.9), which then waited for the longest silence
//! (960 ms). The pause's transcript is ready by then (the model waits for the recognition), and whisper
//! writes how a sentence ends: "So yesterday I went to the...", "The thing is" (no full stop), "Can you
//! tell me about?" read unfinished; "Tell me something nice about cats." reads finished. The words shift
//! the model's log-odds: finished words let a weaker "done" end the turn, unfinished words keep a sure
//! one from ending it (the longest silence still does).
//!
//! On the paused-speech set (`scripts/make-turn-set.py`; `cargo run --release -p tomo-runtime --example
//! turn_words -- <set>` prints the live segmenter's figures): see [`FINISHED_SHIFT`].

/// How the words of a pause end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordsEnd {
    /// A full stop, a question or an exclamation after a word that can end a sentence.
    Finished,
    /// A trailing "...", a comma, no closing punctuation (English), or a last word that needs more
    /// ("the", "and", "because", a preposition outside a wh-question), or a subordinate clause alone
    /// ("If it rains tomorrow.").
    Unfinished,
}

/// Words that do not end an English sentence: articles, possessives, conjunctions, subordinators,
/// hesitations. Pronoun-like words that often do ("that", "some", "so", "to" as in "I'd love to") are left
/// out: a wrong "unfinished" only makes the turn wait, but for every turn that ends with them.
const NEVER_LAST: &[&str] = &[
    "a", "an", "the", "my", "your", "our", "their", "and", "or", "but", "because", "if", "whether",
    "unless", "than", "um", "uh", "er", "erm",
];

/// Prepositions that end a sentence only when a wh-question strands them ("What is it about?", not
/// "Can you tell me about?"). Phrasal-verb particles ("Come in.", "Hold on.") are left out.
const STRANDED_IN_QUESTIONS: &[&str] = &["about", "of", "for", "with", "from", "by", "at", "into"];

const WH_WORDS: &[&str] = &[
    "what", "who", "whom", "which", "where", "when", "how", "why", "whose",
];

/// A clause these begin is not a sentence on its own unless a comma leads on to the main clause (or it is
/// a question: "When is the train?").
const SUBORDINATORS: &[&str] = &[
    "if", "when", "because", "although", "though", "while", "since", "unless", "before", "after",
    "whenever", "once",
];

/// Added to the model's log-odds when the words read finished: 0.2 becomes 0.9, the segmenter's
/// threshold. On the paused-speech set (60 finished and 60 paused sentences, three voices; the live
/// segmenter, whisper base 8-bit, `examples/turn_words.rs`): finished sentences ended within 500 ms of
/// their last word in 49 of 60 instead of 33 (wait mean 399 ms against 579, p90 944 against 960), and
/// mid-sentence pauses were taken for the end in 14 of 60 either way (the fixed 600 ms hangover: 30).
/// The words trade cuts: "Do you know?" or "I really hope that." before the pause now end the turn,
/// "So yesterday I went to the..." or "If it rains tomorrow." no longer do. Chosen offline on the same
/// set's transcripts: at 0.1 instead of 0.2, 48 of 60 ended at the first ask and 16 pauses were cut; at 0.3,
/// 44 and 11; at 0.2, 46 and 12.
pub const FINISHED_SHIFT: f32 = 3.583_519; // ln(9 / 0.25)

/// Subtracted when the words read unfinished: even a model sure of "done" stays under 0.1.
pub const UNFINISHED_SHIFT: f32 = 11.513; // ln(100 000)

/// How `text` (whisper's words for the utterance up to the pause, in `language` as whisper detected or
/// was told it) ends; `None` when it cannot tell (no words, or a language without the word lists whose
/// text shows no sign either way: Chinese and Japanese often come back without punctuation).
pub fn words_end(text: &str, language: Option<&str>) -> Option<WordsEnd> {
    // Closing quotes and brackets after the sentence say nothing about it.
    let text = text
        .trim()
        .trim_end_matches(['"', '\'', '”', '’', ')', ']', '」', '』', '）']);
    let last = text.chars().last()?;
    if text.ends_with("...") || matches!(last, '…' | ',' | '，' | '、' | '-' | '—') {
        return Some(WordsEnd::Unfinished);
    }
    let closed = matches!(last, '.' | '?' | '!' | '。' | '？' | '！');
    let english = language.map_or(text.is_ascii(), |code| code == "en");
    if !english {
        return closed.then_some(WordsEnd::Finished);
    }
    // Only the last sentence counts: "Hi. Where are you from?" is a question.
    let body = text.strip_suffix(last).unwrap_or(text);
    let sentence = body
        .rfind(['.', '?', '!'])
        .map_or(body, |at| &body[at + 1..]);
    let words: Vec<String> = sentence
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let (Some(first), Some(final_word)) = (words.first(), words.last()) else {
        return None;
    };
    if !closed {
        return Some(WordsEnd::Unfinished);
    }
    // "What's it about?" strands its preposition as "What is it about?" does.
    let first = first.split(['\'', '’']).next().unwrap_or(first);
    let is = |list: &[&str], word: &str| list.contains(&word);
    let question = last == '?';
    let needs_more = is(NEVER_LAST, final_word)
        || (is(STRANDED_IN_QUESTIONS, final_word) && !is(WH_WORDS, first))
        || (is(SUBORDINATORS, first) && !question && !sentence.contains(','));
    Some(if needs_more {
        WordsEnd::Unfinished
    } else {
        WordsEnd::Finished
    })
}

/// The probability that the speaker is done, from the model's `probability` and how the words end.
pub fn weigh(probability: f32, words: Option<WordsEnd>) -> f32 {
    let shift = match words {
        None => return probability,
        Some(WordsEnd::Finished) => FINISHED_SHIFT,
        Some(WordsEnd::Unfinished) => -UNFINISHED_SHIFT,
    };
    // Kept off 0 and 1 so a saturated model output still moves.
    let p = probability.clamp(1e-4, 1.0 - 1e-4);
    let logit = (p / (1.0 - p)).ln() + shift;
    1.0 / (1.0 + (-logit).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn english(text: &str) -> Option<WordsEnd> {
        words_end(text, Some("en"))
    }

    #[test]
    fn finished_sentences_read_finished() {
        for text in [
            "Tell me something nice about cats.",
            "What time is it right now?",
            "What are you talking about?",
            "What's it about?",
            "Who’s it from?",
            "If it rains tomorrow, we should stay inside.",
            "When is the train?",
            "Hi. Where are you from?",
            "When I was a kid I had a dog. His name was Max.",
            "Set a timer for 5.",
            "Add 2 and 2.",
            "He said \"no.\"",
            "I'd love to.",
            " Hold on. ",
            "Wow!",
        ] {
            assert_eq!(english(text), Some(WordsEnd::Finished), "{text}");
        }
        for (text, language) in [
            ("今天天气怎么样？", Some("zh")),
            ("Il y en a.", Some("fr")),
            ("今日はいい天気ですね。", None),
        ] {
            assert_eq!(
                words_end(text, language),
                Some(WordsEnd::Finished),
                "{text}"
            );
        }
    }

    #[test]
    fn sentences_that_need_more_read_unfinished() {
        for text in [
            "So yesterday I went to the...",
            "The thing is",
            "Can you tell me about?",
            "Let me think about.",
            "I need eggs and",
            "My sister and",
            "If it rains tomorrow.",
            "When you have a moment.",
            "I was thinking,",
            "Because…",
            "I’m going to the.",
            "Over there, near the café and",
        ] {
            assert_eq!(english(text), Some(WordsEnd::Unfinished), "{text}");
        }
        assert_eq!(words_end("我想，", Some("zh")), Some(WordsEnd::Unfinished));
        // Without a language, plain ASCII is taken for English.
        assert_eq!(words_end("The thing is", None), Some(WordsEnd::Unfinished));
    }

    #[test]
    fn no_words_or_unpunctuated_chinese_say_nothing() {
        for text in ["", "   ", "...?"] {
            assert_eq!(english(text), None, "{text:?}");
        }
        assert_eq!(words_end("今天天气怎么样", Some("zh")), None);
        assert_eq!(words_end("Il y en a", Some("fr")), None);
    }

    #[test]
    fn finished_words_lift_a_fifth_to_the_threshold() {
        let lifted = weigh(0.2, Some(WordsEnd::Finished));
        assert!((lifted - 0.9).abs() < 1e-4, "{lifted}");
        assert!(weigh(0.19, Some(WordsEnd::Finished)) < 0.9);
    }

    #[test]
    fn unfinished_words_keep_even_a_sure_model_under_a_tenth() {
        assert!(weigh(1.0, Some(WordsEnd::Unfinished)) < 0.1);
        assert!(weigh(0.95, Some(WordsEnd::Unfinished)) < 0.01);
    }

    #[test]
    fn without_words_the_model_decides_alone() {
        assert_eq!(weigh(0.37, None), 0.37);
    }
}
