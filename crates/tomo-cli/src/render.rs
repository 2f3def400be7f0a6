//! How the conversation looks in a terminal (the `--json` mode prints raw events instead).

use std::io::Write;

use tomo_protocol::{Event, EventEnvelope, ToolStatus};

/// Prints events for a person. Returns nothing: output errors (a closed pipe) are not worth failing over.
pub struct Renderer {
    json: bool,
    character: String,
    mid_line: bool,
}

impl Renderer {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            character: String::new(),
            mid_line: false,
        }
    }

    pub fn show(&mut self, envelope: &EventEnvelope) {
        let mut out = std::io::stdout().lock();
        if self.json {
            if let Ok(line) = serde_json::to_string(envelope) {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
            return;
        }
        match &envelope.event {
            Event::SessionReady {
                character, tools, ..
            } => {
                self.character = character.clone();
                let tools = if tools.is_empty() {
                    "no tools".to_owned()
                } else {
                    format!("tools: {}", tools.join(", "))
                };
                let _ = writeln!(out, "* {character} is here ({tools}).");
            }
            Event::Sentence { sentence, .. } => {
                if !self.mid_line {
                    let _ = write!(out, "{}: ", self.character);
                    self.mid_line = true;
                }
                let _ = write!(out, "{} ", sentence.display_text);
            }
            Event::ToolCall { call, .. } => {
                self.end_line(&mut out);
                let status = match call.status {
                    ToolStatus::Running => "running".to_owned(),
                    ToolStatus::Completed => "done".to_owned(),
                    ToolStatus::Error => format!(
                        "failed: {}",
                        call.result.as_deref().unwrap_or("unknown error")
                    ),
                };
                let _ = writeln!(out, "  [{} {}]", call.tool_name, status);
            }
            Event::TurnFinished { end, .. } => {
                self.end_line(&mut out);
                if *end == tomo_protocol::TurnEnd::RoundLimit {
                    let _ = writeln!(out, "  (stopped: too many tool rounds in one turn)");
                }
            }
            Event::TurnAborted { .. } => {
                self.end_line(&mut out);
                let _ = writeln!(out, "  (interrupted)");
            }
            Event::HookFailed {
                hook,
                stage,
                message,
                ..
            } => {
                self.end_line(&mut out);
                let _ = writeln!(out, "  (hook {hook} {stage:?} failed: {message})");
            }
            Event::Error { message, .. } => {
                self.end_line(&mut out);
                let _ = writeln!(out, "! {message}");
            }
            // The front end's own notices (devices, models) go where its diagnostics go.
            Event::Notice { level, message } => {
                self.end_line(&mut out);
                let notice = tomo_runtime::Notice {
                    level: *level,
                    message: message.clone(),
                };
                eprintln!("{notice}");
            }
            _ => {}
        }
        let _ = out.flush();
    }

    fn end_line(&mut self, out: &mut impl Write) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
    }
}
