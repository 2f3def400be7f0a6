//! Lifecycle hooks: before a turn (context injection), after the turn's text, after playback drained.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

/// What a hook knows about the character and the turn.
#[derive(Debug, Clone)]
pub struct HookContext {
    pub agent_id: String,
    pub character_name: String,
    /// Per-character data directory (already includes the agent id).
    pub data_dir: PathBuf,
    pub turn_id: u64,
}

/// The finished text of a turn, as hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    pub user_text: String,
    pub assistant_text: String,
    /// True for turns the character started on its own.
    pub proactive: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

/// A lifecycle hook. Every method has a do-nothing default so a hook implements only what it needs.
/// Failures and timeouts are reported as events and never fail the turn.
pub trait Hook: Send + Sync {
    fn name(&self) -> &str;

    /// Returns text for the `[memory context]` block of the user message, or `None`.
    fn on_before_turn(
        &self,
        _user_text: String,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<Option<String>, HookError>> {
        Box::pin(async { Ok(None) })
    }

    /// The turn's text is complete (audio may still be playing).
    fn on_after_turn(
        &self,
        _turn: Arc<TurnRecord>,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        Box::pin(async { Ok(()) })
    }

    /// The output sink has drained: the last sentence of the turn has been delivered/played.
    fn on_after_playback(
        &self,
        _turn: Arc<TurnRecord>,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        Box::pin(async { Ok(()) })
    }
}

impl std::fmt::Debug for dyn Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hook({})", self.name())
    }
}
