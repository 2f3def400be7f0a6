//! The coordinator's side of questions to the user (see `approvals.rs`): asking, and acting on the
//! `approve` op.

use tomo_plugin_api::trust::{TrustDecision, TrustStore};
use tomo_protocol::{ErrorCode, Event, NoticeLevel};

use super::Coordinator;
use super::approvals::{Open, ToolQuestion};

impl Coordinator {
    /// The character's commands nobody answered for yet: one question each (not again while open).
    pub(super) fn ask_about_commands(&mut self) {
        for command in self.character.pending_commands.clone() {
            if self.questions.asks_about(&command) {
                continue;
            }
            let request = super::approvals::command_request(&command);
            let id = self.questions.open(Open::Command(command));
            self.emit(Event::ApprovalRequested { id, request });
        }
    }

    /// The keys of the current character's endpoint and environment, which no event may carry.
    pub(super) fn refresh_secrets(&mut self) {
        self.secrets = super::redaction::session_secrets(
            self.env.llm.api_key.as_deref(),
            self.character.profile.llm.api_key_env.as_deref(),
        );
    }

    /// A `confirm = true` tool wants to run: show the question to every client.
    pub(super) fn ask_about_tool(&mut self, question: ToolQuestion) {
        let id = self.questions.open(Open::Tool(question.reply));
        self.emit(Event::ApprovalRequested {
            id,
            request: question.request,
        });
    }

    /// The user answered question `id`.
    pub(super) async fn answer(&mut self, id: u64, allow: bool) {
        match self.questions.take(id) {
            None => self.emit(Event::Error {
                code: ErrorCode::InvalidOp,
                message: format!("no open question {id} (already answered or timed out)"),
                recoverable: true,
            }),
            Some(Open::Tool(reply)) => {
                // A call that timed out meanwhile has dropped its receiver: the answer is moot.
                let delivered = reply.send(allow).is_ok();
                let allowed = allow && delivered;
                self.emit(Event::ApprovalResolved { id, allowed });
            }
            Some(Open::Command(command)) => {
                let decision = if allow {
                    TrustDecision::Allowed
                } else {
                    TrustDecision::Denied
                };
                let store = TrustStore::in_data_root(&self.env.data_root);
                if let Err(error) = store.remember(&command, decision) {
                    // Not remembered: asked again next time, but this answer still counts now.
                    tracing::warn!(%error, "cannot remember the answer");
                    self.emit(Event::Error {
                        code: ErrorCode::Plugin,
                        message: error.to_string(),
                        recoverable: true,
                    });
                }
                self.emit(Event::ApprovalResolved { id, allowed: allow });
                if !allow {
                    self.emit(Event::Notice {
                        level: NoticeLevel::Info,
                        message: format!(
                            "plugin `{}` stays off: `{}` will not run (allow it later with `tomo plugins trust {}`)",
                            command.plugin,
                            command.command_line(),
                            command.plugin
                        ),
                    });
                    return;
                }
                // The same character again, now with the plugin: its tools join the next turn.
                self.stop_current_turn().await;
                let profile = self.character.profile.clone();
                let label = format!("plugin `{}`", command.plugin);
                if let Err(error) = self.reload(profile, &label).await {
                    self.emit(Event::Error {
                        code: error.code(),
                        message: format!("cannot start {label}: {error}"),
                        recoverable: true,
                    });
                }
            }
        }
    }
}
