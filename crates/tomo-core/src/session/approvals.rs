//! Questions to the user: "may this plugin start this program?" and "may this tool run with these
//! arguments?". The coordinator numbers each one, shows it as `approval_requested`, and settles it when
//! the `approve` op comes back (only the user's own clients send ops: the server's token and op policy
//! see to that). A tool's question is asked from inside its call and waits with a timeout that counts
//! as no.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tomo_plugin_api::trust::McpCommand;
use tomo_protocol::ApprovalRequest;

/// A question from a tool call, with where its answer goes.
#[derive(Debug)]
pub(crate) struct ToolQuestion {
    pub request: ApprovalRequest,
    pub reply: oneshot::Sender<bool>,
}

/// Asks the user from inside a tool call. Cloned into every tool that needs confirmation.
#[derive(Debug, Clone)]
pub struct Approvals {
    tx: mpsc::UnboundedSender<ToolQuestion>,
}

impl Approvals {
    pub(crate) fn channel() -> (Self, mpsc::UnboundedReceiver<ToolQuestion>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    /// Whether the user allowed `request` within `timeout`. No answer, a closed session or a dropped
    /// question all count as no.
    pub async fn ask(&self, request: ApprovalRequest, timeout: Duration) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.tx.send(ToolQuestion { request, reply }).is_err() {
            return false;
        }
        matches!(tokio::time::timeout(timeout, answer).await, Ok(Ok(true)))
    }
}

/// What an open question is about.
#[derive(Debug)]
pub(crate) enum Open {
    Command(McpCommand),
    Tool(oneshot::Sender<bool>),
}

/// The open questions, by id.
#[derive(Debug, Default)]
pub(crate) struct OpenQuestions {
    next_id: u64,
    open: BTreeMap<u64, Open>,
}

impl OpenQuestions {
    /// The id of a new question.
    pub fn open(&mut self, question: Open) -> u64 {
        self.next_id += 1;
        self.open.insert(self.next_id, question);
        self.next_id
    }

    /// Whether this exact command is already being asked about (a reload must not ask twice).
    pub fn asks_about(&self, command: &McpCommand) -> bool {
        let fingerprint = command.fingerprint();
        self.open
            .values()
            .any(|q| matches!(q, Open::Command(c) if c.fingerprint() == fingerprint))
    }

    pub fn take(&mut self, id: u64) -> Option<Open> {
        self.open.remove(&id)
    }

    /// Tool questions nobody waits for any more (the call timed out or the turn ended): their ids, so
    /// clients can drop the prompts.
    pub fn abandoned(&mut self) -> Vec<u64> {
        let gone: Vec<u64> = self
            .open
            .iter()
            .filter(|(_, q)| matches!(q, Open::Tool(reply) if reply.is_closed()))
            .map(|(id, _)| *id)
            .collect();
        for id in &gone {
            self.open.remove(id);
        }
        gone
    }

    /// Drops the questions about commands other than `keep` (fingerprints), for a character that is
    /// replaced: their ids, so clients can drop the prompts.
    pub fn drop_commands_except(&mut self, keep: &[String]) -> Vec<u64> {
        let gone: Vec<u64> = self
            .open
            .iter()
            .filter(|(_, q)| matches!(q, Open::Command(c) if !keep.contains(&c.fingerprint())))
            .map(|(id, _)| *id)
            .collect();
        for id in &gone {
            self.open.remove(id);
        }
        gone
    }
}

/// How the user is shown a command.
pub(crate) fn command_request(command: &McpCommand) -> ApprovalRequest {
    ApprovalRequest::RunCommand {
        plugin: command.plugin.clone(),
        command: command.command_line(),
        env: command.env_names.clone(),
        manifest: command.manifest.display().to_string(),
    }
}
