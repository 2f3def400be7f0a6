//! A tool marked `confirm = true` in its plugin's `[tool]` section: every call first asks the user
//! (an `approval_requested` event answered by the `approve` op, or the terminal's y/N) and runs only on
//! a yes within [`CONFIRM_TIMEOUT`]. No answer is a no; so is a session nobody can ask.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tomo_llm::tools::{Tool, ToolContext, ToolError, ToolSpec};
use tomo_protocol::ApprovalRequest;

use crate::session::Approvals;

/// How long a call waits for the user's answer.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) struct ConfirmedTool {
    inner: Arc<dyn Tool>,
    /// The inner spec, its timeout extended by the wait for the answer (the registry's timeout covers
    /// the whole call) and without retries (a side effect is not repeated without asking).
    spec: ToolSpec,
    plugin: String,
    approvals: Option<Approvals>,
}

impl ConfirmedTool {
    pub(crate) fn wrap(inner: Arc<dyn Tool>, plugin: &str, approvals: Option<Approvals>) -> Self {
        let own = inner.spec();
        let spec = own
            .clone()
            .with_timeout(own.timeout + CONFIRM_TIMEOUT)
            .with_retries(0);
        Self {
            inner,
            spec,
            plugin: plugin.to_owned(),
            approvals,
        }
    }
}

impl Tool for ConfirmedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, Result<String, ToolError>> {
        let inner = Arc::clone(&self.inner);
        let approvals = self.approvals.clone();
        let request = ApprovalRequest::ToolCall {
            plugin: self.plugin.clone(),
            tool_name: self.spec.name.clone(),
            args: args.clone(),
            timeout_ms: u64::try_from(CONFIRM_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        };
        let timeout = inner.spec().timeout;
        Box::pin(async move {
            let allowed = match approvals {
                Some(approvals) => approvals.ask(request, CONFIRM_TIMEOUT).await,
                None => false,
            };
            if !allowed {
                return Err(ToolError::failed(
                    "the user did not allow this call (it was not run); do not retry it unless the user asks",
                ));
            }
            match tokio::time::timeout(timeout, inner.call(args, ctx)).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::Timeout(timeout)),
            }
        })
    }
}
