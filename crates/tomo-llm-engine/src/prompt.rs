//! Turns an OpenAI request into the plain (role, content) turns that llama.cpp's own template engine
//! (`llama_chat_apply_template`, the template read from the GGUF) formats.
//!
//! That engine knows roles and text only: no `tools`, no `tool_calls`, no `tool` role. So tools are written
//! into the system message in the Hermes convention that Qwen2.5's own template uses (`<tools>` with one
//! JSON signature per line, calls answered as `<tool_call>{…}</tool_call>`), earlier calls are written back
//! into the assistant's text the same way, and tool results become a user turn of `<tool_response>` blocks,
//! as Qwen's template renders them. The system turn (persona + tools) comes first and is byte-identical
//! from request to request, so its tokens stay in the KV cache across turns.

use serde_json::Value;

use crate::api::{ChatRequest, Message, Tool};

/// One turn for the chat template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub role: String,
    pub content: String,
}

impl Turn {
    fn new(role: &str, content: String) -> Self {
        Self {
            role: role.to_owned(),
            content,
        }
    }
}

/// The turns of `request`, in order; the caller adds the assistant's generation prompt.
pub fn turns(request: &ChatRequest) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::with_capacity(request.messages.len() + 1);
    let tools = tools_block(&request.tools);
    let mut system_done = false;
    for message in &request.messages {
        match message.role.as_str() {
            "system" | "developer" if !system_done && turns.is_empty() => {
                let mut content = message.text();
                content.push_str(&tools);
                turns.push(Turn::new("system", content));
                system_done = true;
            }
            "assistant" => turns.push(Turn::new("assistant", assistant_text(message))),
            "tool" => {
                let block = format!("<tool_response>\n{}\n</tool_response>", message.text());
                // Results of one round's calls go back as one user turn.
                match turns.last_mut() {
                    Some(last)
                        if last.role == "user" && last.content.ends_with("</tool_response>") =>
                    {
                        last.content.push('\n');
                        last.content.push_str(&block);
                    }
                    _ => turns.push(Turn::new("user", block)),
                }
            }
            // A later system message (some clients send instructions mid-conversation) keeps its role.
            role => turns.push(Turn::new(role, message.text())),
        }
    }
    if !system_done && !tools.is_empty() {
        turns.insert(0, Turn::new("system", tools.trim_start().to_owned()));
    }
    turns
}

fn assistant_text(message: &Message) -> String {
    let mut text = message.text();
    for call in &message.tool_calls {
        let arguments = match &call.function.arguments {
            Value::String(raw) => {
                serde_json::from_str::<Value>(raw).unwrap_or(Value::String(raw.clone()))
            }
            Value::Null => Value::Object(Default::default()),
            other => other.clone(),
        };
        // Written by hand so "name" comes first, as the model writes it (serde_json may sort keys).
        let name = Value::String(call.function.name.clone());
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "<tool_call>\n{{\"name\": {name}, \"arguments\": {arguments}}}\n</tool_call>"
        ));
    }
    text
}

/// The tool signatures and how to call them; empty without tools.
fn tools_block(tools: &[Tool]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut block = String::from(
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
    );
    for tool in tools {
        let function = &tool.function;
        block.push_str(&format!(
            "\n{{\"type\": \"function\", \"function\": {{\"name\": {}, \"description\": {}, \"parameters\": {}}}}}",
            Value::String(function.name.clone()),
            Value::String(function.description.clone()),
            function.parameters
        ));
    }
    block.push_str(
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments \
         within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \
         \"arguments\": <args-json-object>}\n</tool_call>",
    );
    block
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn request(messages: Value, tools: Value) -> ChatRequest {
        serde_json::from_value(json!({ "messages": messages, "tools": tools })).unwrap()
    }

    fn get_time() -> Value {
        json!([{"type": "function", "function": {
            "name": "get_time", "description": "Current time", "parameters": {"type": "object", "properties": {}}
        }}])
    }

    #[test]
    fn tools_go_into_the_system_turn_and_it_does_not_change_between_turns() {
        let first = turns(&request(
            json!([{"role": "system", "content": "You are Hana."}, {"role": "user", "content": "hi"}]),
            get_time(),
        ));
        let later = turns(&request(
            json!([
                {"role": "system", "content": "You are Hana."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "time?"},
            ]),
            get_time(),
        ));
        assert_eq!(first[0], later[0], "the cached prefix is stable");
        assert!(first[0].content.starts_with("You are Hana.\n\n# Tools"));
        assert!(first[0].content.contains(
            r#"{"type": "function", "function": {"name": "get_time", "description": "Current time", "parameters": {"#
        ));
        assert!(first[0].content.contains("<tool_call>"));
        assert_eq!(later.len(), 4);
    }

    #[test]
    fn calls_and_results_are_written_as_the_model_writes_and_reads_them() {
        let turns = turns(&request(
            json!([
                {"role": "system", "content": "S"},
                {"role": "user", "content": "time and page?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "web_fetch", "arguments": "{\"url\":\"u\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "10:00"},
                {"role": "tool", "tool_call_id": "b", "content": "page"},
            ]),
            get_time(),
        ));
        assert_eq!(turns.len(), 4);
        assert_eq!(
            turns[2].content,
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"web_fetch\", \"arguments\": {\"url\":\"u\"}}\n</tool_call>"
        );
        assert_eq!(turns[3].role, "user");
        assert_eq!(
            turns[3].content,
            "<tool_response>\n10:00\n</tool_response>\n<tool_response>\npage\n</tool_response>"
        );
    }

    #[test]
    fn without_a_system_message_tools_still_come_first_and_without_tools_nothing_is_added() {
        let with_tools = turns(&request(
            json!([{"role": "user", "content": "hi"}]),
            get_time(),
        ));
        assert_eq!(with_tools[0].role, "system");
        assert!(with_tools[0].content.starts_with("# Tools"));
        let plain = turns(&request(
            json!([{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]),
            json!([]),
        ));
        assert_eq!(plain[0].content, "S");
    }
}
