//! Assembles streamed tool-call fragments into whole calls.
//!
//! Real servers differ: OpenAI sends the id and name only in the first fragment and interleaves calls by
//! `index`; some servers repeat id/name in every fragment; Ollama sends each call whole, sometimes all with
//! `index: 0` and distinct ids; a few send `arguments` as a JSON object instead of a string.

use std::collections::BTreeMap;

use serde_json::Value;

/// One streamed piece of a tool call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCallFragment {
    /// Position of the fragment inside the chunk's `tool_calls` array (used when `index` is missing).
    pub position: u32,
    pub index: Option<u32>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<Value>,
}

/// A complete tool call, ready to validate and run.
#[derive(Debug, Clone, PartialEq)]
pub struct AssembledCall {
    pub id: String,
    pub name: String,
    /// The arguments JSON text exactly as the model produced it (may be invalid JSON).
    pub arguments: String,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: BTreeMap<u32, PartialCall>,
    /// Maps a server-sent index to our slot (they differ when a server reuses an index for a new call).
    slot_of_index: BTreeMap<u32, u32>,
}

impl ToolCallAssembler {
    pub fn push(&mut self, fragment: ToolCallFragment) {
        let index = fragment.index.unwrap_or(fragment.position);
        let mut slot = *self.slot_of_index.entry(index).or_insert(index);
        // A different id at an index already in use means a new call (Ollama numbers every call 0).
        if let (Some(id), Some(existing)) = (&fragment.id, self.calls.get(&slot))
            && !id.is_empty()
            && !existing.id.is_empty()
            && existing.id != *id
        {
            slot = self.calls.keys().next_back().map_or(0, |last| last + 1);
            self.slot_of_index.insert(index, slot);
        }
        let call = self.calls.entry(slot).or_default();
        if let Some(id) = fragment.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(name) = fragment.name.filter(|name| !name.is_empty()) {
            // Servers that repeat the name send it whole each time; servers that split it send pieces.
            if call.name.is_empty() {
                call.name = name;
            } else if call.name != name {
                call.name.push_str(&name);
            }
        }
        match fragment.arguments {
            Some(Value::String(piece)) => call.arguments.push_str(&piece),
            Some(Value::Null) | None => {}
            Some(whole) => call.arguments = whole.to_string(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The calls in index order. Calls without an id get a stable generated one so results can be matched.
    pub fn finish(self, round: u32) -> Vec<AssembledCall> {
        self.calls
            .into_iter()
            .map(|(slot, call)| AssembledCall {
                id: if call.id.is_empty() {
                    format!("call_r{round}_{slot}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn frag(
        index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<Value>,
    ) -> ToolCallFragment {
        ToolCallFragment {
            position: 0,
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: args,
        }
    }

    #[test]
    fn interleaved_fragments_assemble_by_index() {
        let mut asm = ToolCallAssembler::default();
        asm.push(frag(Some(0), Some("a"), Some("get_time"), Some(json!(""))));
        asm.push(frag(
            Some(1),
            Some("b"),
            Some("web_fetch"),
            Some(json!("{\"u")),
        ));
        asm.push(frag(Some(0), None, None, Some(json!("{}"))));
        asm.push(frag(Some(1), None, None, Some(json!("rl\":\"x\"}"))));
        let calls = asm.finish(1);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[0].name, "get_time");
        assert_eq!(calls[0].arguments, "{}");
        assert_eq!(calls[1].id, "b");
        assert_eq!(calls[1].arguments, "{\"url\":\"x\"}");
    }

    #[test]
    fn repeated_name_and_id_are_not_duplicated() {
        let mut asm = ToolCallAssembler::default();
        asm.push(frag(
            Some(0),
            Some("a"),
            Some("echo"),
            Some(json!("{\"t\"")),
        ));
        asm.push(frag(Some(0), Some("a"), Some("echo"), Some(json!(":1}"))));
        let calls = asm.finish(1);
        assert_eq!(calls[0].name, "echo");
        assert_eq!(calls[0].arguments, "{\"t\":1}");
    }

    #[test]
    fn reused_index_with_new_id_is_a_new_call() {
        let mut asm = ToolCallAssembler::default();
        asm.push(frag(Some(0), Some("a"), Some("one"), Some(json!({"x": 1}))));
        asm.push(frag(Some(0), Some("b"), Some("two"), Some(json!({"y": 2}))));
        let calls = asm.finish(1);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "one");
        assert_eq!(calls[0].arguments, "{\"x\":1}");
        assert_eq!(calls[1].name, "two");
        assert_eq!(calls[1].id, "b");
    }

    #[test]
    fn missing_index_and_id_fall_back_to_position_and_generated_id() {
        let mut asm = ToolCallAssembler::default();
        let mut f = frag(None, None, Some("t"), None);
        f.position = 2;
        asm.push(f);
        let calls = asm.finish(3);
        assert_eq!(calls[0].id, "call_r3_2");
        assert_eq!(calls[0].arguments, "{}");
    }
}
