//! Tool calls that small models write as text instead of structured `tool_calls`.
//!
//! Qwen2.5-Coder asked to call a tool writes the right JSON inside a ```json fence; others write
//! `<tool_call>{…}</tool_call>` (the Hermes/Qwen convention) or a bare `{"name": …, "arguments": …}`.
//! [`TextToolFilter`] sits on the streamed text: prose passes through at once, and only text that may be
//! the start of such a call (a backtick, a `<`, a `{`) is held back until it is clearly prose (released
//! unchanged) or a call (removed from the text and returned as a [`TextToolCall`]). A call is never shown
//! or spoken; the agent loop runs it like a structured one (events, schema validation, repair round).
//!
//! Pure: no I/O, no async. Fed one delta at a time; `finish` at the end of the stream decides what is
//! still held (a model often stops right after the JSON, without the closing fence or tag).

use serde_json::{Map, Value};

/// One call recovered from text: the arguments are JSON text, as in a structured call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextToolCall {
    pub name: String,
    pub arguments: String,
}

/// What one step of the filter lets through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filtered {
    /// Text to show and speak now.
    pub text: String,
    /// Calls completed by this step.
    pub calls: Vec<TextToolCall>,
}

/// A candidate that grows past this is not a tool call a small model wrote: let it through.
const MAX_HELD: usize = 16 * 1024;
const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
/// First keys of an object that starts a call (`{"name": …}`, `{"function": {…}}`, …).
const CALL_KEYS: &[&str] = &[
    "name",
    "function",
    "tool",
    "tool_name",
    "tool_call",
    "type",
    "arguments",
    "parameters",
];
/// Fence info strings whose body may be a call; any other language is code, passed through.
const CALL_FENCES: &[&str] = &["", "json", "json5", "tool_call", "tool_code", "tool"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Undecided,
    CallLike,
    NotCall,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Prose,
    /// One or two backticks held.
    Ticks(u8),
    /// "```" and the info string, up to the newline.
    FenceHeader,
    /// Inside a json (or unnamed) fence, from `body` (byte offset in `held`).
    FenceBody {
        body: usize,
        shape: Shape,
    },
    /// A fence that is code, not a call: passes through until its closing "```".
    VerbatimFence {
        ticks: u8,
    },
    /// A prefix of `<tool_call>` held.
    Tag,
    /// After `<tool_call>`, until `</tool_call>`.
    TagBody,
    /// A `{` in prose and what follows, while it may be a call object.
    Object {
        shape: Shape,
        scan: JsonScan,
    },
}

/// Tracks nesting outside strings, to find where an object ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct JsonScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl JsonScan {
    fn push(&mut self, c: char) {
        if self.in_string {
            match (self.escaped, c) {
                (true, _) => self.escaped = false,
                (false, '\\') => self.escaped = true,
                (false, '"') => self.in_string = false,
                _ => {}
            }
            return;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }
}

/// The streaming filter. One per LLM request (a round of the agent loop).
#[derive(Debug, Clone)]
pub struct TextToolFilter {
    known: Vec<String>,
    held: String,
    mode: Mode,
}

impl TextToolFilter {
    /// `known_tools`: the names offered to the model. An object naming one of them is a call even without
    /// an `arguments` key; other objects need one.
    pub fn new(known_tools: impl IntoIterator<Item = String>) -> Self {
        Self {
            known: known_tools.into_iter().collect(),
            held: String::new(),
            mode: Mode::Prose,
        }
    }

    /// Feeds one streamed delta.
    pub fn push(&mut self, delta: &str) -> Filtered {
        let mut out = Filtered::default();
        for c in delta.chars() {
            self.step(c, &mut out);
        }
        out
    }

    /// The stream ended: decides what is still held.
    pub fn finish(&mut self) -> Filtered {
        let mut out = Filtered::default();
        let held = std::mem::take(&mut self.held);
        match std::mem::replace(&mut self.mode, Mode::Prose) {
            Mode::Prose | Mode::VerbatimFence { .. } => out.text.push_str(&held),
            Mode::Ticks(_) | Mode::FenceHeader | Mode::Tag => out.text.push_str(&held),
            Mode::FenceBody { body, shape } => match parse_calls(&held[body..], &self.known) {
                Some(calls) if shape == Shape::CallLike => out.calls = calls,
                _ => out.text.push_str(&held),
            },
            Mode::Object { shape, .. } => match parse_calls(&held, &self.known) {
                Some(calls) if shape == Shape::CallLike => out.calls = calls,
                _ => out.text.push_str(&held),
            },
            Mode::TagBody => out.calls = tag_calls(&held[OPEN_TAG.len()..], &self.known),
        }
        out
    }

    fn release(&mut self, out: &mut Filtered) {
        out.text.push_str(&self.held);
        self.held.clear();
        self.mode = Mode::Prose;
    }

    fn step(&mut self, c: char, out: &mut Filtered) {
        match self.mode {
            Mode::Prose => match c {
                '`' => self.hold(c, Mode::Ticks(1)),
                '<' => self.hold(c, Mode::Tag),
                '{' => {
                    let mut scan = JsonScan::default();
                    scan.push(c);
                    self.hold(
                        c,
                        Mode::Object {
                            shape: Shape::Undecided,
                            scan,
                        },
                    );
                }
                _ => out.text.push(c),
            },
            Mode::Ticks(n) => {
                if c == '`' {
                    self.held.push(c);
                    self.mode = if n == 2 {
                        Mode::FenceHeader
                    } else {
                        Mode::Ticks(n + 1)
                    };
                } else {
                    self.release(out);
                    self.step(c, out);
                }
            }
            Mode::FenceHeader => self.fence_header(c, out),
            Mode::FenceBody { body, shape } => self.fence_body(c, body, shape, out),
            Mode::VerbatimFence { ticks } => {
                out.text.push(c);
                self.mode = match (c, ticks) {
                    ('`', 2) => Mode::Prose,
                    ('`', n) => Mode::VerbatimFence { ticks: n + 1 },
                    _ => Mode::VerbatimFence { ticks: 0 },
                };
            }
            Mode::Tag => {
                self.held.push(c);
                if self.held == OPEN_TAG {
                    self.mode = Mode::TagBody;
                } else if !OPEN_TAG.starts_with(&self.held) {
                    self.held.pop();
                    self.release(out);
                    self.step(c, out);
                }
            }
            Mode::TagBody => {
                self.held.push(c);
                let closed = self.held.ends_with(CLOSE_TAG);
                if closed || self.held.len() > MAX_HELD {
                    let end = self.held.len() - if closed { CLOSE_TAG.len() } else { 0 };
                    let body = self.held.get(OPEN_TAG.len()..end).unwrap_or_default();
                    out.calls.extend(tag_calls(body, &self.known));
                    self.held.clear();
                    self.mode = Mode::Prose;
                }
            }
            Mode::Object { shape, mut scan } => {
                self.held.push(c);
                scan.push(c);
                let shape = match shape {
                    Shape::Undecided => object_shape(&self.held),
                    decided => decided,
                };
                match shape {
                    Shape::NotCall => {
                        self.held.pop();
                        self.release(out);
                        self.step(c, out);
                    }
                    _ if scan.depth == 0 => {
                        match parse_calls(&self.held, &self.known) {
                            Some(calls) => {
                                out.calls.extend(calls);
                                self.held.clear();
                                self.mode = Mode::Prose;
                            }
                            None => self.release(out),
                        };
                    }
                    _ if self.held.len() > MAX_HELD => self.release(out),
                    shape => self.mode = Mode::Object { shape, scan },
                }
            }
        }
    }

    fn hold(&mut self, c: char, mode: Mode) {
        self.held.push(c);
        self.mode = mode;
    }

    fn fence_header(&mut self, c: char, out: &mut Filtered) {
        self.held.push(c);
        let info = self.held[3..].trim_end_matches(['{', '[', '\n']).trim();
        let calls_fence = CALL_FENCES.iter().any(|f| f.eq_ignore_ascii_case(info));
        match c {
            '\n' if calls_fence => {
                self.mode = Mode::FenceBody {
                    body: self.held.len(),
                    shape: Shape::Undecided,
                }
            }
            // "```json{…" on one line: the brace already belongs to the body.
            '{' | '[' if calls_fence => {
                let body = self.held.len() - 1;
                self.mode = Mode::FenceBody {
                    body,
                    shape: body_shape(&self.held[body..]),
                }
            }
            '\n' | '{' | '[' => {
                out.text.push_str(&self.held);
                self.held.clear();
                self.mode = Mode::VerbatimFence { ticks: 0 };
            }
            _ if self.held.len() > 40 => {
                out.text.push_str(&self.held);
                self.held.clear();
                self.mode = Mode::VerbatimFence { ticks: 0 };
            }
            _ => {}
        }
    }

    fn fence_body(&mut self, c: char, body: usize, shape: Shape, out: &mut Filtered) {
        self.held.push(c);
        let shape = match shape {
            Shape::Undecided => body_shape(&self.held[body..]),
            decided => decided,
        };
        if shape == Shape::NotCall {
            // Code, not a call: out it goes, and the rest of the fence passes through. Backticks already
            // written may be the start of its closing fence.
            let ticks = self.held[body..].len() - self.held[body..].trim_end_matches('`').len();
            out.text.push_str(&self.held);
            self.held.clear();
            self.mode = match ticks {
                0..=2 => Mode::VerbatimFence { ticks: ticks as u8 },
                _ => Mode::Prose,
            };
            return;
        }
        if self.held[body..].ends_with("```") {
            let content = &self.held[body..self.held.len() - 3];
            match parse_calls(content, &self.known) {
                Some(calls) => {
                    out.calls.extend(calls);
                    self.held.clear();
                    self.mode = Mode::Prose;
                }
                None => self.release(out),
            }
            return;
        }
        if self.held.len() > MAX_HELD {
            out.text.push_str(&self.held);
            self.held.clear();
            self.mode = Mode::VerbatimFence { ticks: 0 };
            return;
        }
        self.mode = Mode::FenceBody { body, shape };
    }
}

/// Whether a fence body can still be a call: an object (or an array of objects) whose first key names one.
fn body_shape(body: &str) -> Shape {
    let body = body.trim_start();
    match body.chars().next() {
        None => Shape::Undecided,
        Some('{') => object_shape(body),
        Some('[') => {
            let inner = body[1..].trim_start();
            match inner.chars().next() {
                None => Shape::Undecided,
                Some('{') => object_shape(inner),
                Some(_) => Shape::NotCall,
            }
        }
        Some(_) => Shape::NotCall,
    }
}

/// `text` starts with `{`: decided once the first key is complete (or clearly not a string key).
fn object_shape(text: &str) -> Shape {
    let rest = text[1..].trim_start();
    let Some(after_quote) = rest.strip_prefix('"') else {
        return if rest.is_empty() {
            Shape::Undecided
        } else {
            Shape::NotCall
        };
    };
    match after_quote.find('"') {
        Some(end) => {
            if CALL_KEYS.contains(&&after_quote[..end]) {
                Shape::CallLike
            } else {
                Shape::NotCall
            }
        }
        None if CALL_KEYS.iter().any(|k| k.starts_with(after_quote)) => Shape::Undecided,
        None => Shape::NotCall,
    }
}

/// The body of a `<tool_call>` block: it was meant as a call, so it is never released as text. When its
/// JSON cannot be read, a call with the name we can find still goes to the tool, whose validation error
/// lets the model correct itself.
fn tag_calls(body: &str, known: &[String]) -> Vec<TextToolCall> {
    let body = strip_fence(body);
    if let Some(calls) = parse_calls(body, known) {
        return calls;
    }
    match loose_name(body) {
        Some(name) => vec![TextToolCall {
            name,
            arguments: body.trim().to_owned(),
        }],
        None => {
            tracing::warn!(len = body.len(), "unreadable <tool_call> block dropped");
            Vec::new()
        }
    }
}

fn strip_fence(body: &str) -> &str {
    let trimmed = body.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let inner = inner.trim_end().strip_suffix("```").unwrap_or(inner);
    // Drop the info string ("json") up to the first newline or brace.
    match inner.find(['\n', '{', '[']) {
        Some(start) => inner[start..].trim(),
        None => inner.trim(),
    }
}

/// `"name": "…"` anywhere in broken JSON.
fn loose_name(text: &str) -> Option<String> {
    let after = &text[text.find("\"name\"")? + 6..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let after = after.strip_prefix('"')?;
    let name = &after[..after.find('"')?];
    (!name.trim().is_empty()).then(|| name.trim().to_owned())
}

/// Reads one or more call objects (an object, an array, or objects one after another), tolerating
/// missing closing braces at the end (a model stopped by its token limit). `None` if anything read is
/// not a call: then the text was prose or code and goes out unchanged.
pub fn parse_calls(text: &str, known: &[String]) -> Option<Vec<TextToolCall>> {
    let values = read_values(text.trim())?;
    let mut calls = Vec::new();
    for value in values {
        match value {
            Value::Array(items) if !items.is_empty() => {
                for item in items {
                    calls.push(call_from(&item, known)?);
                }
            }
            other => calls.push(call_from(&other, known)?),
        }
    }
    (!calls.is_empty()).then_some(calls)
}

fn read_values(text: &str) -> Option<Vec<Value>> {
    if text.is_empty() {
        return None;
    }
    let whole: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect();
    if let Ok(values) = whole {
        return Some(values);
    }
    // Close what is still open, once: `{"name": "x", "arguments": {"a": 1}` → add "}".
    let mut scan = JsonScan::default();
    let mut open = Vec::new();
    for c in text.chars() {
        let was_in_string = scan.in_string;
        scan.push(c);
        if !was_in_string && !scan.in_string {
            match c {
                '{' => open.push('}'),
                '[' => open.push(']'),
                '}' | ']' => {
                    open.pop();
                }
                _ => {}
            }
        }
    }
    if scan.in_string || open.is_empty() {
        return None;
    }
    let mut repaired = text.trim_end().trim_end_matches(',').to_owned();
    repaired.extend(open.iter().rev());
    serde_json::Deserializer::from_str(&repaired)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .ok()
}

fn call_from(value: &Value, known: &[String]) -> Option<TextToolCall> {
    let object = value.as_object()?;
    // {"tool_call": {...}} and {"type": "function", "function": {"name": ..., "arguments": ...}}
    for wrapper in ["tool_call", "function"] {
        if let Some(inner @ Value::Object(_)) = object.get(wrapper) {
            return call_from(inner, known);
        }
    }
    let name = ["name", "function", "tool", "tool_name"]
        .iter()
        .find_map(|key| object.get(*key)?.as_str())
        .map(str::trim)
        .filter(|name| !name.is_empty())?;
    let arguments = ["arguments", "parameters", "args", "input", "tool_input"]
        .iter()
        .find_map(|key| object.get(*key));
    let arguments = match arguments {
        None if known.iter().any(|k| k == name) && only_naming_keys(object) => "{}".to_owned(),
        None => return None,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => without_nulls(&map).to_string(),
            // Not JSON: handed on as written, so schema validation reports it to the model.
            _ => text.clone(),
        },
        Some(Value::Null) => "{}".to_owned(),
        Some(Value::Object(map)) => without_nulls(map).to_string(),
        Some(other) => other.to_string(),
    };
    Some(TextToolCall {
        name: name.to_owned(),
        arguments,
    })
}

/// Small models fill optional parameters they do not use with `null` (Qwen2.5-Coder-1.5B asked for the
/// time writes `{"utc_offset_hours": null}`); a schema with `"type": "number"` rejects that. Writing
/// `null` for a parameter means leaving it out, so it is left out.
fn without_nulls(map: &Map<String, Value>) -> Value {
    Value::Object(
        map.iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// `{"name": "get_time"}` is a call of a known tool; `{"name": "Mochi", "age": 3}` is data.
fn only_naming_keys(object: &Map<String, Value>) -> bool {
    object.keys().all(|key| {
        matches!(
            key.as_str(),
            "name" | "function" | "tool" | "tool_name" | "type"
        )
    })
}

#[cfg(test)]
#[path = "text_tools_tests.rs"]
mod tests;
