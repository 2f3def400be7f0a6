//! Ready-made [`ScriptedResponse`]s for the usual shapes of a streamed chat completion.
//!
//! Every stream opens with [`chunk::role`] and, unless it disconnects, ends like OpenAI's:
//! a finish chunk, a usage chunk, then `data: [DONE]`.

use std::time::Duration;

use serde_json::Value;

use crate::{ScriptedResponse, StreamStep, chunk};

/// `prompt_tokens` reported by the usage chunk of every scripted reply. The server does not
/// tokenize prompts; a fixed value keeps usage assertions deterministic.
pub const PROMPT_TOKENS: u32 = 10;

/// Longest run of word characters in one delta, so long words and unspaced scripts (Japanese,
/// Chinese) still arrive in several pieces, as real tokenizers deliver them.
const MAX_WORD_CHARS: usize = 8;

/// Splits text into small token-like deltas: a word with its leading whitespace (`" world"`) or a
/// single punctuation mark. Concatenating the pieces gives back `text` exactly.
pub fn split_tokens(text: &str) -> Vec<String> {
    enum State {
        Empty,
        Space,
        Word(usize),
    }
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut state = State::Empty;
    let mut flush = |current: &mut String| {
        if !current.is_empty() {
            tokens.push(std::mem::take(current));
        }
    };
    for c in text.chars() {
        state = if c.is_whitespace() {
            if let State::Word(_) = state {
                flush(&mut current);
            }
            current.push(c);
            State::Space
        } else if c.is_alphanumeric() || c == '_' {
            match state {
                State::Word(n) if n < MAX_WORD_CHARS => {
                    current.push(c);
                    State::Word(n + 1)
                }
                State::Word(_) => {
                    flush(&mut current);
                    current.push(c);
                    State::Word(1)
                }
                State::Empty | State::Space => {
                    current.push(c);
                    State::Word(1)
                }
            }
        } else {
            // Punctuation stands alone, but takes any whitespace before it (" (").
            if let State::Word(_) = state {
                flush(&mut current);
            }
            current.push(c);
            flush(&mut current);
            State::Empty
        };
    }
    flush(&mut current);
    tokens
}

/// Splits `s` into `parts` pieces of near-equal character count (never inside a UTF-8
/// character). Empty pieces are dropped, so short strings give fewer pieces.
fn split_even(s: &str, parts: usize) -> Vec<&str> {
    let parts = parts.max(1);
    let boundaries: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .collect();
    let chars = boundaries.len() - 1;
    (0..parts)
        .map(|k| &s[boundaries[k * chars / parts]..boundaries[(k + 1) * chars / parts]])
        .filter(|piece| !piece.is_empty())
        .collect()
}

fn delay(steps: &mut Vec<StreamStep>, duration: Duration) {
    if !duration.is_zero() {
        steps.push(StreamStep::Delay(duration));
    }
}

/// Pushes one delta per token of `text`, with the given delays; returns how many were pushed.
fn push_deltas(
    steps: &mut Vec<StreamStep>,
    text: &str,
    make: fn(&str) -> Value,
    first_delay: Duration,
    per_delay: Duration,
) -> u32 {
    let tokens = split_tokens(text);
    for (i, token) in tokens.iter().enumerate() {
        delay(steps, if i == 0 { first_delay } else { per_delay });
        steps.push(StreamStep::Chunk(make(token)));
    }
    u32::try_from(tokens.len()).unwrap_or(u32::MAX)
}

fn push_ending(steps: &mut Vec<StreamStep>, finish_reason: &str, completion_tokens: u32) {
    steps.push(StreamStep::Chunk(chunk::finish(finish_reason)));
    steps.push(StreamStep::Chunk(chunk::usage(
        PROMPT_TOKENS,
        completion_tokens,
    )));
    steps.push(StreamStep::Done);
}

/// A plain streamed answer: role, `text` in small deltas, finish `"stop"`, usage, `[DONE]`.
pub fn text_reply(text: &str) -> ScriptedResponse {
    text_reply_with_delay(text, Duration::ZERO, Duration::ZERO)
}

/// Like [`text_reply`], but waits `first_token_delay` before the first delta and
/// `per_token_delay` before each later one (the role chunk is sent at once, like real servers
/// that flush headers and role before the model produces anything).
pub fn text_reply_with_delay(
    text: &str,
    first_token_delay: Duration,
    per_token_delay: Duration,
) -> ScriptedResponse {
    let mut steps = vec![StreamStep::Chunk(chunk::role())];
    let n = push_deltas(
        &mut steps,
        text,
        chunk::text,
        first_token_delay,
        per_token_delay,
    );
    push_ending(&mut steps, "stop", n);
    ScriptedResponse::Stream(steps)
}

/// Thinking in `reasoning_content` deltas, then the answer in `content` deltas, finish `"stop"`.
pub fn reasoning_then_text(reasoning: &str, text: &str) -> ScriptedResponse {
    let mut steps = vec![StreamStep::Chunk(chunk::role())];
    let mut n = push_deltas(
        &mut steps,
        reasoning,
        chunk::reasoning,
        Duration::ZERO,
        Duration::ZERO,
    );
    n += push_deltas(
        &mut steps,
        text,
        chunk::text,
        Duration::ZERO,
        Duration::ZERO,
    );
    push_ending(&mut steps, "stop", n);
    ScriptedResponse::Stream(steps)
}

/// Role and the deltas of `text`, then the connection drops: no finish, no `[DONE]`, no terminal
/// HTTP chunk.
pub fn text_then_disconnect(text: &str) -> ScriptedResponse {
    let mut steps = vec![StreamStep::Chunk(chunk::role())];
    push_deltas(
        &mut steps,
        text,
        chunk::text,
        Duration::ZERO,
        Duration::ZERO,
    );
    steps.push(StreamStep::Disconnect);
    ScriptedResponse::Stream(steps)
}

/// Streamed tool calls, each `(id, name, arguments_json)`. Each call's arguments are split into
/// `fragments` pieces and the calls are interleaved by index (call 0 piece 0, call 1 piece 0,
/// call 0 piece 1, …) so clients must accumulate by `index`. The first fragment of each call is
/// a [`chunk::tool_call_start`] (id, name, empty arguments) followed by its first piece. Ends
/// with finish `"tool_calls"`, usage, `[DONE]`.
pub fn tool_calls(calls: &[(&str, &str, &str)], fragments: usize) -> ScriptedResponse {
    tool_calls_with_finish(calls, fragments, "tool_calls")
}

/// Like [`tool_calls`] but with finish reason `"stop"`, as some servers (e.g. older Ollama)
/// report tool calls; clients must trust the accumulated calls, not the reason.
pub fn tool_calls_finish_stop(calls: &[(&str, &str, &str)], fragments: usize) -> ScriptedResponse {
    tool_calls_with_finish(calls, fragments, "stop")
}

fn tool_calls_with_finish(
    calls: &[(&str, &str, &str)],
    fragments: usize,
    finish_reason: &str,
) -> ScriptedResponse {
    let mut steps = vec![StreamStep::Chunk(chunk::role())];
    let pieces: Vec<Vec<&str>> = calls
        .iter()
        .map(|(_, _, args)| split_even(args, fragments))
        .collect();
    let mut emitted = 0u32;
    for round in 0..fragments.max(1) {
        for (index, ((id, name, _), call_pieces)) in calls.iter().zip(&pieces).enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            if round == 0 {
                steps.push(StreamStep::Chunk(chunk::tool_call_start(index, id, name)));
                emitted += 1;
            }
            if let Some(piece) = call_pieces.get(round) {
                steps.push(StreamStep::Chunk(chunk::tool_call_args(index, piece)));
                emitted += 1;
            }
        }
    }
    push_ending(&mut steps, finish_reason, emitted);
    ScriptedResponse::Stream(steps)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunks(response: &ScriptedResponse) -> Vec<&Value> {
        let ScriptedResponse::Stream(steps) = response else {
            panic!("not a stream: {response:?}");
        };
        steps
            .iter()
            .filter_map(|s| match s {
                StreamStep::Chunk(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    fn delta_field(chunks: &[&Value], field: &str) -> String {
        chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"][field].as_str())
            .collect()
    }

    #[test]
    fn tokens_are_small_and_lossless() {
        let text = "Hello, world! It's  a \"test\" of Tomo's streaming.\nこんにちは世界、元気ですか？ supercalifragilistic";
        let tokens = split_tokens(text);
        assert_eq!(tokens.concat(), text);
        assert_eq!(&tokens[..4], ["Hello", ",", " world", "!"]);
        assert!(
            tokens
                .iter()
                .all(|t| t.trim().chars().count() <= MAX_WORD_CHARS)
        );
        assert!(split_tokens("").is_empty());
    }

    #[test]
    fn split_even_respects_char_boundaries() {
        assert_eq!(split_even("abcdef", 3), ["ab", "cd", "ef"]);
        assert_eq!(split_even("ab", 4), ["a", "b"]);
        assert_eq!(split_even("", 3), Vec::<&str>::new());
        assert_eq!(split_even("日本語", 0), ["日本語"]);
        assert_eq!(split_even("日本語!", 2).concat(), "日本語!");
    }

    #[test]
    fn text_reply_shape() {
        let reply = text_reply("Hi there.");
        let ScriptedResponse::Stream(steps) = &reply else {
            panic!()
        };
        assert_eq!(steps.last(), Some(&StreamStep::Done));
        let c = chunks(&reply);
        assert_eq!(c[0], &chunk::role());
        assert_eq!(delta_field(&c, "content"), "Hi there.");
        assert_eq!(c[c.len() - 2], &chunk::finish("stop"));
        assert_eq!(c[c.len() - 1], &chunk::usage(PROMPT_TOKENS, 3));
    }

    #[test]
    fn delays_come_before_tokens() {
        let first = Duration::from_millis(50);
        let per = Duration::from_millis(5);
        let ScriptedResponse::Stream(steps) = text_reply_with_delay("a b", first, per) else {
            panic!()
        };
        assert_eq!(steps[1], StreamStep::Delay(first));
        assert_eq!(steps[2], StreamStep::Chunk(chunk::text("a")));
        assert_eq!(steps[3], StreamStep::Delay(per));
        assert_eq!(steps[4], StreamStep::Chunk(chunk::text(" b")));
    }

    #[test]
    fn reasoning_precedes_text() {
        let reply = reasoning_then_text("Let me think.", "42");
        let c = chunks(&reply);
        assert_eq!(delta_field(&c, "reasoning_content"), "Let me think.");
        assert_eq!(delta_field(&c, "content"), "42");
        let last_reasoning = c
            .iter()
            .rposition(|c| c["choices"][0]["delta"]["reasoning_content"].is_string());
        let first_text = c
            .iter()
            .position(|c| c["choices"][0]["delta"]["content"] == "42");
        assert!(last_reasoning < first_text);
    }

    #[test]
    fn disconnect_has_no_finish_or_done() {
        let ScriptedResponse::Stream(steps) = text_then_disconnect("partial answer") else {
            panic!()
        };
        assert_eq!(steps.last(), Some(&StreamStep::Disconnect));
        assert!(!steps.contains(&StreamStep::Done));
        assert!(!steps.contains(&StreamStep::Chunk(chunk::finish("stop"))));
    }

    #[test]
    fn tool_calls_interleave_by_index() {
        let reply = tool_calls(
            &[
                ("call_a", "search", r#"{"q":"tomo"}"#),
                ("call_b", "clock", "{}"),
            ],
            3,
        );
        let c = chunks(&reply);
        let calls: Vec<&Value> = c
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
            .collect();
        let order: Vec<(u64, bool)> = calls
            .iter()
            .map(|tc| (tc["index"].as_u64().unwrap(), tc.get("id").is_some()))
            .collect();
        // call 0 start + piece 0, call 1 start + piece 0, then remaining pieces alternate.
        assert_eq!(
            order,
            [
                (0, true),
                (0, false),
                (1, true),
                (1, false),
                (0, false),
                (1, false),
                (0, false)
            ]
        );
        for (index, args) in [(0, r#"{"q":"tomo"}"#), (1, "{}")] {
            let joined: String = calls
                .iter()
                .filter(|tc| tc["index"] == index)
                .filter_map(|tc| tc["function"]["arguments"].as_str())
                .collect();
            assert_eq!(joined, args);
        }
        assert!(
            calls
                .iter()
                .filter(|tc| tc.get("id").is_none())
                .all(|tc| tc["function"].get("name").is_none())
        );
        assert_eq!(c[c.len() - 2], &chunk::finish("tool_calls"));
        let stop = tool_calls_finish_stop(&[("c", "n", "{}")], 1);
        let c = chunks(&stop);
        assert_eq!(c[c.len() - 2], &chunk::finish("stop"));
        assert_eq!(c[c.len() - 1]["usage"]["completion_tokens"], json!(2));
    }
}
