//! What the user actually heard of an interrupted answer: the sentences played to the end, and the part
//! of the one playing up to the sample that was playing (by its share of the audio), cut back to a word
//! boundary. History keeps only that, marked, so the next request tells the model where it was cut off.

use tomo_llm::ChatMessage;
use tomo_llm::agent::TurnTranscript;

use crate::sink::Playhead;

/// How the cut is marked in history (the model reads it in the next request's context).
pub const CUT_MARKER: &str = "… [interrupted by the user]";

/// The heard text of the sentences shown so far (`(index, display text)` in order).
pub fn heard_text(sentences: &[(u32, String)], playhead: Playhead) -> String {
    let mut heard = String::new();
    for (index, text) in sentences {
        let part = if *index < playhead.sentence {
            text.trim().to_owned()
        } else if *index == playhead.sentence {
            cut(text.trim(), playhead.fraction)
        } else {
            break;
        };
        if part.is_empty() {
            continue;
        }
        if !(heard.is_empty() || is_cjk_end(&heard) || is_cjk_start(&part)) {
            heard.push(' ');
        }
        heard.push_str(&part);
    }
    heard
}

/// The first `fraction` of `text`, by characters, ending at a word boundary (inside a word the cut goes
/// back to the previous space; text without spaces, such as Chinese, is cut where the share falls).
fn cut(text: &str, fraction: f32) -> String {
    let chars: Vec<char> = text.chars().collect();
    let share = fraction.clamp(0.0, 1.0);
    let keep = ((chars.len() as f32) * share).floor() as usize;
    if keep >= chars.len() {
        return text.to_owned();
    }
    let mut end = keep;
    let inside_word = end > 0 && !chars[end].is_whitespace() && !chars[end - 1].is_whitespace();
    if inside_word && let Some(space) = chars[..end].iter().rposition(|c| c.is_whitespace()) {
        end = space;
    }
    chars[..end]
        .iter()
        .collect::<String>()
        .trim_end_matches([' ', ',', '，', '、'])
        .to_owned()
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3000..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xFF00..=0xFFEF)
}

fn is_cjk_end(text: &str) -> bool {
    text.chars().next_back().is_some_and(is_cjk)
}

fn is_cjk_start(text: &str) -> bool {
    text.chars().next().is_some_and(is_cjk)
}

/// The turn as history keeps it after the cut: tool calls and results stay (they happened), their
/// assistant text goes (it is in `heard` if it was heard), and the heard words end with the marker.
pub fn heard_transcript(transcript: &TurnTranscript, heard: &str) -> TurnTranscript {
    let messages = transcript
        .messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Assistant { tool_calls, .. } if tool_calls.is_empty() => None,
            ChatMessage::Assistant { tool_calls, .. } => Some(ChatMessage::Assistant {
                content: None,
                tool_calls: tool_calls.clone(),
            }),
            other => Some(other.clone()),
        })
        .collect();
    let unfinished_text = if heard.is_empty() {
        String::new()
    } else {
        format!("{heard}{CUT_MARKER}")
    };
    TurnTranscript {
        text: heard.to_owned(),
        messages,
        unfinished_text,
        rounds: transcript.rounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences() -> Vec<(u32, String)> {
        vec![
            (0, "One sentence here.".to_owned()),
            (1, "Two is a longer sentence here.".to_owned()),
            (2, "Three.".to_owned()),
        ]
    }

    fn at(sentence: u32, fraction: f32) -> Playhead {
        Playhead { sentence, fraction }
    }

    #[test]
    fn whole_sentences_then_the_share_of_the_playing_one_at_a_word_boundary() {
        assert_eq!(heard_text(&sentences(), at(0, 0.0)), "");
        assert_eq!(heard_text(&sentences(), at(1, 0.0)), "One sentence here.");
        // 15 of 30 characters: "Two is a longer" ends at a space.
        assert_eq!(
            heard_text(&sentences(), at(1, 0.5)),
            "One sentence here. Two is a longer"
        );
        // 13 characters fall inside "longer": back to the word before.
        assert_eq!(
            heard_text(&sentences(), at(1, 0.45)),
            "One sentence here. Two is a"
        );
        assert_eq!(
            heard_text(&sentences(), at(3, 0.0)),
            "One sentence here. Two is a longer sentence here. Three."
        );
    }

    #[test]
    fn chinese_is_cut_by_its_share_and_joined_without_spaces() {
        let said = vec![(0, "你好。".to_owned()), (1, "今天天气很好。".to_owned())];
        assert_eq!(heard_text(&said, at(1, 0.5)), "你好。今天天");
    }
}
