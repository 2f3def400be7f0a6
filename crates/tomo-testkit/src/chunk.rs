//! Builders for `chat.completion.chunk` objects shaped like OpenAI's streaming output, for use in
//! [`StreamStep::Chunk`](crate::StreamStep::Chunk).
//!
//! Fields are fixed constants ([`ID`], [`CREATED`], [`MODEL`]) so recorded streams are
//! deterministic and easy to compare.

use serde_json::{Value, json};

/// `id` of every chunk (one completion per stream, as OpenAI does).
pub const ID: &str = "chatcmpl-tomo-testkit";
/// `model` of every chunk, and the only model listed by `GET /v1/models`.
pub const MODEL: &str = "scripted-model";
/// `created` of every chunk (a fixed Unix time, 2023-11-14).
pub const CREATED: u64 = 1_700_000_000;

fn envelope(choices: Value) -> Value {
    json!({
        "id": ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "choices": choices,
    })
}

fn choice(delta: Value, finish_reason: Option<&str>) -> Value {
    envelope(json!([{
        "index": 0,
        "delta": delta,
        "logprobs": null,
        "finish_reason": finish_reason,
    }]))
}

/// The opening chunk: `delta: {role: "assistant", content: ""}`.
pub fn role() -> Value {
    choice(json!({ "role": "assistant", "content": "" }), None)
}

/// A content delta.
pub fn text(s: &str) -> Value {
    choice(json!({ "content": s }), None)
}

/// A reasoning delta in `reasoning_content`, as DeepSeek, llama.cpp and vLLM send thinking.
pub fn reasoning(s: &str) -> Value {
    choice(json!({ "reasoning_content": s }), None)
}

/// A delta with `content: ""` (some servers interleave these; clients must not choke on them).
pub fn empty_content() -> Value {
    text("")
}

/// First fragment of a tool call: carries `id`, `type` and the function name, empty arguments.
pub fn tool_call_start(index: u32, id: &str, name: &str) -> Value {
    choice(
        json!({ "tool_calls": [{
            "index": index,
            "id": id,
            "type": "function",
            "function": { "name": name, "arguments": "" },
        }] }),
        None,
    )
}

/// A later fragment of a tool call: only `index` and a piece of `function.arguments`, no id or
/// name, as OpenAI sends them (clients must accumulate by index).
pub fn tool_call_args(index: u32, fragment: &str) -> Value {
    choice(
        json!({ "tool_calls": [{ "index": index, "function": { "arguments": fragment } }] }),
        None,
    )
}

/// The final choice chunk: empty delta and `finish_reason` (`"stop"`, `"tool_calls"`, `"length"`).
pub fn finish(reason: &str) -> Value {
    choice(json!({}), Some(reason))
}

/// The trailing usage chunk (`choices: []`), as OpenAI sends with `stream_options.include_usage`.
pub fn usage(prompt: u32, completion: u32) -> Value {
    let mut chunk = envelope(json!([]));
    chunk["usage"] = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    });
    chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_have_the_openai_envelope() {
        for c in [
            role(),
            text("x"),
            reasoning("r"),
            finish("stop"),
            usage(1, 2),
        ] {
            assert_eq!(c["id"], ID);
            assert_eq!(c["object"], "chat.completion.chunk");
            assert_eq!(c["created"], CREATED);
            assert_eq!(c["model"], MODEL);
            assert!(c["choices"].is_array());
        }
        assert_eq!(role()["choices"][0]["delta"]["role"], "assistant");
        assert!(text("x")["choices"][0]["finish_reason"].is_null());
        assert_eq!(finish("length")["choices"][0]["finish_reason"], "length");
        assert_eq!(usage(3, 4)["usage"]["total_tokens"], 7);
        assert_eq!(usage(3, 4)["choices"], json!([]));
    }

    #[test]
    fn tool_call_fragments_carry_id_and_name_only_first() {
        let start = &tool_call_start(1, "call_1", "search")["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(start["index"], 1);
        assert_eq!(start["id"], "call_1");
        assert_eq!(start["type"], "function");
        assert_eq!(start["function"]["name"], "search");
        assert_eq!(start["function"]["arguments"], "");
        let args = &tool_call_args(1, "{\"q\"")["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(
            args,
            &json!({ "index": 1, "function": { "arguments": "{\"q\"" } })
        );
    }
}
