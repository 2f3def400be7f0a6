//! How the conversation looks in a terminal (the `--json` mode prints raw events instead).

use std::io::Write;

use tomo_protocol::{Event, EventEnvelope, ResumeReason, ToolStatus};

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
        self.show_on(&mut std::io::stdout().lock(), envelope);
    }

    fn show_on(&mut self, out: &mut impl Write, envelope: &EventEnvelope) {
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
                self.end_line(out);
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
                self.end_line(out);
                if *end == tomo_protocol::TurnEnd::RoundLimit {
                    let _ = writeln!(out, "  (stopped: too many tool rounds in one turn)");
                }
            }
            Event::TurnAborted { .. } => {
                self.end_line(out);
                let _ = writeln!(out, "  (interrupted)");
            }
            // Speech over the answer: the voice waits while the words decide.
            Event::AnswerHeld { .. } => {
                self.end_line(out);
                let _ = writeln!(out, "  (you spoke over {}: holding)", self.character);
            }
            Event::AnswerResumed { why, .. } => {
                self.end_line(out);
                let _ = writeln!(out, "  (going on: {})", resume_reason(*why));
            }
            Event::HookFailed {
                hook,
                stage,
                message,
                ..
            } => {
                self.end_line(out);
                let _ = writeln!(out, "  (hook {hook} {stage:?} failed: {message})");
            }
            Event::Error { message, .. } => {
                self.end_line(out);
                let _ = writeln!(out, "! {message}");
            }
            // The front end's own notices (devices, models) go where its diagnostics go.
            Event::Notice { level, message } => {
                self.end_line(out);
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

/// Why the held answer went on, as the terminal says it.
fn resume_reason(why: ResumeReason) -> &'static str {
    match why {
        ResumeReason::NoWords => "no words were heard",
        ResumeReason::Backchannel => "only a listening sound",
        ResumeReason::OwnVoice => "that was the character's own voice",
        ResumeReason::OnlyOverAnswer => "the speech was only over the answer",
        ResumeReason::TimedOut => "no words came in time",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn shown(renderer: &mut Renderer, events: Vec<Event>) -> String {
        let mut out = Vec::new();
        for (seq, event) in events.into_iter().enumerate() {
            renderer.show_on(
                &mut out,
                &EventEnvelope {
                    seq: seq as u64,
                    event,
                },
            );
        }
        String::from_utf8(out).unwrap()
    }

    /// Talking over the character shows that its voice waits, and why it went on.
    #[test]
    fn a_held_answer_and_its_resumption_are_shown_on_their_own_lines() {
        let mut renderer = Renderer::new(false);
        renderer.character = "Hana".into();
        renderer.mid_line = true; // the answer's text is being printed
        let turn_id = 3;
        let text = shown(
            &mut renderer,
            vec![
                Event::AnswerHeld { turn_id },
                Event::AnswerResumed {
                    turn_id,
                    why: ResumeReason::Backchannel,
                },
            ],
        );
        assert_eq!(
            text,
            "\n  (you spoke over Hana: holding)\n  (going on: only a listening sound)\n"
        );
    }
}
