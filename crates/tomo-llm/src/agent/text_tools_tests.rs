#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::*;

fn known() -> Vec<String> {
    vec!["get_time".to_owned(), "web_fetch".to_owned()]
}

/// Feeds `chunks` one by one, then finishes; returns the visible text and the calls.
fn run(chunks: &[&str]) -> (String, Vec<TextToolCall>) {
    let mut filter = TextToolFilter::new(known());
    let mut text = String::new();
    let mut calls = Vec::new();
    for chunk in chunks {
        let out = filter.push(chunk);
        text.push_str(&out.text);
        calls.extend(out.calls);
    }
    let out = filter.finish();
    text.push_str(&out.text);
    calls.extend(out.calls);
    (text, calls)
}

fn chars(text: &str) -> Vec<String> {
    text.chars().map(String::from).collect()
}

fn run_chars(text: &str) -> (String, Vec<TextToolCall>) {
    let pieces = chars(text);
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    run(&refs)
}

fn call(name: &str, arguments: &str) -> TextToolCall {
    TextToolCall {
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

#[test]
fn prose_streams_through_without_delay() {
    let mut filter = TextToolFilter::new(known());
    for piece in [
        "[joy] Hello",
        " Alex!",
        " How is",
        " Mochi today?\n",
        "3.14, 1,000 (ok).",
    ] {
        let out = filter.push(piece);
        assert_eq!(out.text, piece, "nothing held back");
        assert!(out.calls.is_empty());
    }
    assert_eq!(filter.finish(), Filtered::default());
}

#[test]
fn a_fenced_json_call_as_qwen_writes_it_is_taken_out_of_the_text() {
    let answer = "Let me check.\n```json\n{\n  \"name\": \"get_time\",\n  \"arguments\": {}\n}\n```\nOne moment.";
    let (text, calls) = run_chars(answer);
    assert_eq!(calls, vec![call("get_time", "{}")]);
    assert_eq!(text, "Let me check.\n\nOne moment.");
    assert!(!text.contains("get_time"));
}

#[test]
fn the_prose_before_a_fence_is_out_before_the_fence_begins() {
    let mut filter = TextToolFilter::new(known());
    assert_eq!(filter.push("Sure, checking.\n").text, "Sure, checking.\n");
    assert_eq!(filter.push("```json\n{\"name\": \"get_").text, "");
    let out = filter.push("time\", \"arguments\": {}}\n```");
    assert_eq!(out.calls, vec![call("get_time", "{}")]);
    assert_eq!(out.text, "");
}

#[test]
fn a_tool_call_block_is_a_call_with_its_arguments() {
    let (text, calls) = run(&[
        "Okay! <tool_",
        "call>\n{\"name\": \"web_fetch\", \"arguments\": {\"url\": \"http://x\"}}\n</tool_call>",
        " Done.",
    ]);
    assert_eq!(calls, vec![call("web_fetch", r#"{"url":"http://x"}"#)]);
    assert_eq!(text, "Okay!  Done.");
}

#[test]
fn a_bare_object_in_prose_is_a_call() {
    let (text, calls) = run_chars(
        "Let me see. {\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}} Right.",
    );
    assert_eq!(calls, vec![call("get_time", r#"{"zone":"UTC"}"#)]);
    assert_eq!(text, "Let me see.  Right.");
}

#[test]
fn json_that_is_data_and_braces_in_prose_are_released_unchanged() {
    for prose in [
        "Her profile: {\"name\": \"Mochi\", \"age\": 3} is cute.",
        "I {really} like it.",
        "An empty {} object and {\"colour\": \"red\"}.",
        "a < b and <b>bold</b>, `inline` code, ``double``.",
        "Use ```python\nprint({\"name\": 1})\n``` then.",
    ] {
        let (text, calls) = run_chars(prose);
        assert_eq!(text, prose);
        assert!(calls.is_empty(), "{prose}: {calls:?}");
    }
}

#[test]
fn a_code_fence_passes_through_before_it_closes() {
    let mut filter = TextToolFilter::new(known());
    let out = filter.push("```rust\nfn main() {}\n");
    assert_eq!(out.text, "```rust\nfn main() {}\n");
    let out = filter.push("```");
    assert_eq!(out.text, "```");
    assert_eq!(filter.push(" after").text, " after");
}

#[test]
fn a_json_fence_that_is_not_a_call_is_released_at_its_first_key() {
    let mut filter = TextToolFilter::new(known());
    // Held while the key may still be "name"…
    assert_eq!(filter.push("```json\n{\"nam").text, "");
    // …released the moment it cannot be, and the rest of the fence passes through.
    assert_eq!(filter.push("es\"").text, "```json\n{\"names\"");
    assert_eq!(filter.push(": 1}\n```").text, ": 1}\n```");
    assert_eq!(filter.push(" ok").text, " ok");
}

#[test]
fn a_call_cut_off_at_the_end_of_the_stream_still_counts() {
    // No closing fence.
    let (text, calls) = run(&["```json\n{\"name\": \"get_time\", \"arguments\": {}}\n"]);
    assert_eq!((text.as_str(), calls), ("", vec![call("get_time", "{}")]));
    // No closing tag, a brace missing.
    let (text, calls) =
        run(&["<tool_call>{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}"]);
    assert_eq!(text, "");
    assert_eq!(calls, vec![call("get_time", r#"{"zone":"UTC"}"#)]);
    // A bare object cut off.
    let (text, calls) = run(&["{\"name\": \"get_time\", \"arguments\": {"]);
    assert_eq!((text.as_str(), calls), ("", vec![call("get_time", "{}")]));
}

#[test]
fn several_calls_in_an_array_or_one_per_line() {
    let (_, calls) = run_chars(
        "```json\n[{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"web_fetch\", \"arguments\": {\"url\": \"u\"}}]\n```",
    );
    assert_eq!(
        calls,
        vec![call("get_time", "{}"), call("web_fetch", r#"{"url":"u"}"#)]
    );
    let (_, calls) = run_chars(
        "```\n{\"name\": \"get_time\", \"arguments\": {}}\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n```",
    );
    assert_eq!(
        calls,
        vec![
            call("get_time", "{}"),
            call("get_time", r#"{"zone":"CET"}"#)
        ]
    );
}

#[test]
fn openai_and_other_shapes_are_understood() {
    let cases = [
        (
            r#"{"type": "function", "function": {"name": "get_time", "arguments": "{\"zone\": \"UTC\"}"}}"#,
            call("get_time", r#"{"zone":"UTC"}"#),
        ),
        (
            r#"{"tool": "web_fetch", "parameters": {"url": "u"}}"#,
            call("web_fetch", r#"{"url":"u"}"#),
        ),
        (r#"{"name": "get_time"}"#, call("get_time", "{}")),
        (
            r#"{"function": "get_time", "arguments": null}"#,
            call("get_time", "{}"),
        ),
        // Unknown tools are calls too: the tool registry answers "unknown tool" and the model can correct.
        (
            r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#,
            call("get_weather", r#"{"city":"Oslo"}"#),
        ),
        // Arguments that are not JSON are handed on as written, for schema validation to report.
        (
            r#"{"name": "web_fetch", "arguments": "the url"}"#,
            call("web_fetch", "the url"),
        ),
    ];
    for (json, expected) in cases {
        let (text, calls) = run_chars(&format!("```json\n{json}\n```"));
        assert_eq!(text, "", "{json}");
        assert_eq!(calls, vec![expected], "{json}");
    }
}

#[test]
fn optional_parameters_given_as_null_are_left_out() {
    let (_, calls) = run_chars(
        r#"{"name": "get_time", "arguments": {"utc_offset_hours": null, "zone": "UTC"}}"#,
    );
    assert_eq!(calls, vec![call("get_time", r#"{"zone":"UTC"}"#)]);
    let (_, calls) =
        run_chars(r#"{"name": "get_time", "arguments": "{\"utc_offset_hours\": null}"}"#);
    assert_eq!(calls, vec![call("get_time", "{}")]);
}

#[test]
fn an_unknown_name_without_arguments_is_data() {
    let prose = r#"{"name": "Mochi"}"#;
    assert_eq!(run_chars(prose), (prose.to_owned(), Vec::new()));
}

#[test]
fn a_broken_tool_call_block_is_never_shown() {
    let (text, calls) =
        run(&["<tool_call>{\"name\": \"get_time\", \"arguments\": {zone: UTC}}</tool_call>"]);
    assert_eq!(text, "");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_time");
    assert!(serde_json::from_str::<Value>(&calls[0].arguments).is_err());
    let (text, calls) = run(&["Hi <tool_call>gibberish</tool_call>!"]);
    assert_eq!((text.as_str(), calls.len()), ("Hi !", 0));
}

#[test]
fn a_fenced_tool_call_inside_a_tag_is_read() {
    let (text, calls) = run_chars(
        "<tool_call>\n```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```\n</tool_call>",
    );
    assert_eq!((text.as_str(), calls), ("", vec![call("get_time", "{}")]));
}

#[test]
fn the_same_line_fence_form_is_read() {
    let (text, calls) = run_chars("```json{\"name\": \"get_time\", \"arguments\": {}}```");
    assert_eq!((text.as_str(), calls), ("", vec![call("get_time", "{}")]));
}

#[test]
fn strings_with_braces_and_quotes_do_not_end_an_object_early() {
    let (text, calls) =
        run_chars(r#"{"name": "web_fetch", "arguments": {"url": "http://x/?q={a}\"}"}} ok"#);
    assert_eq!(text, " ok");
    assert_eq!(
        calls,
        vec![call("web_fetch", r#"{"url":"http://x/?q={a}\"}"}"#)]
    );
}

#[test]
fn a_runaway_candidate_is_released_not_held_forever() {
    let long = format!("{{\"name\": \"{}", "x".repeat(MAX_HELD + 10));
    let (text, calls) = run(&[&long]);
    assert_eq!(text, long);
    assert!(calls.is_empty());
}

proptest! {
    /// However the stream is cut into deltas, the text and the calls are the same.
    #[test]
    fn chunking_does_not_change_the_result(cuts in proptest::collection::vec(0usize..200, 0..12)) {
        let answer = "[joy] Hi! ```json\n{\"name\": \"get_time\", \"arguments\": {}}\n``` So {x} <b> \
            <tool_call>{\"name\": \"web_fetch\", \"arguments\": {\"url\": \"u\"}}</tool_call> end `c` \
            {\"name\": \"Mochi\", \"age\": 3}";
        let whole = run(&[answer]);
        let mut bounds: Vec<usize> = cuts
            .into_iter()
            .map(|c| c % answer.len())
            .filter(|c| answer.is_char_boundary(*c))
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut pieces = Vec::new();
        let mut start = 0;
        for b in bounds {
            pieces.push(&answer[start..b]);
            start = b;
        }
        pieces.push(&answer[start..]);
        prop_assert_eq!(run(&pieces), whole.clone());
        prop_assert_eq!(whole.1.len(), 2);
        let data = r#"{"name": "Mochi", "age": 3}"#;
        prop_assert!(whole.0.contains(data), "data kept: {}", whole.0);
    }

    /// Text without any of the three openers is never held.
    #[test]
    fn prose_is_never_held(text in "[^`<{]{0,80}") {
        let mut filter = TextToolFilter::new(known());
        prop_assert_eq!(filter.push(&text).text, text);
    }
}
