//! Runs lifecycle hooks: all hooks of a stage concurrently, each in its own task (a panic stays there) and
//! under a timeout. A failure is reported and skipped, never fatal.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, join_all};

use tomo_plugin_api::hooks::{Hook, HookContext, HookError, TurnRecord};
use tomo_protocol::HookStage;

/// A hook that failed or timed out.
#[derive(Debug, Clone, PartialEq)]
pub struct HookFailure {
    pub hook: String,
    pub stage: HookStage,
    pub message: String,
}

/// Why a hook did not deliver.
#[derive(Debug, thiserror::Error)]
enum HookOutcome {
    #[error("{}", .0.0)]
    Failed(HookError),
    #[error("the hook panicked")]
    Panicked,
    #[error("the hook was cancelled")]
    Cancelled,
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
}

async fn guarded<T: Send + 'static>(
    future: BoxFuture<'static, Result<T, HookError>>,
    timeout: Duration,
) -> Result<T, HookOutcome> {
    let mut task = tokio::spawn(future);
    match tokio::time::timeout(timeout, &mut task).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(error))) => Err(HookOutcome::Failed(error)),
        Ok(Err(join)) if join.is_panic() => Err(HookOutcome::Panicked),
        Ok(Err(_)) => Err(HookOutcome::Cancelled),
        Err(_) => {
            task.abort();
            Err(HookOutcome::TimedOut(timeout))
        }
    }
}

/// Returns the non-empty context blocks in hook order, and the failures.
pub async fn before_turn(
    hooks: &[Arc<dyn Hook>],
    user_text: &str,
    ctx: Arc<HookContext>,
    timeout: Duration,
) -> (Vec<String>, Vec<HookFailure>) {
    let runs = hooks.iter().map(|hook| {
        let future = hook.on_before_turn(user_text.to_owned(), Arc::clone(&ctx));
        async move { (hook.name().to_owned(), guarded(future, timeout).await) }
    });
    let mut blocks = Vec::new();
    let mut failures = Vec::new();
    for (hook, outcome) in join_all(runs).await {
        match outcome {
            Ok(Some(block)) if !block.trim().is_empty() => blocks.push(block.trim().to_owned()),
            Ok(_) => {}
            Err(outcome) => failures.push(HookFailure {
                hook,
                stage: HookStage::BeforeTurn,
                message: outcome.to_string(),
            }),
        }
    }
    (blocks, failures)
}

/// The stages that run after a turn's text exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStage {
    /// The text is complete (audio may still play).
    Turn,
    /// The sink drained: the last sentence was heard.
    Playback,
}

impl From<AfterStage> for HookStage {
    fn from(stage: AfterStage) -> Self {
        match stage {
            AfterStage::Turn => HookStage::AfterTurn,
            AfterStage::Playback => HookStage::AfterPlayback,
        }
    }
}

/// Runs `on_after_turn` or `on_after_playback` of every hook.
pub async fn after(
    hooks: &[Arc<dyn Hook>],
    stage: AfterStage,
    turn: Arc<TurnRecord>,
    ctx: Arc<HookContext>,
    timeout: Duration,
) -> Vec<HookFailure> {
    let runs = hooks.iter().map(|hook| {
        let future = match stage {
            AfterStage::Playback => hook.on_after_playback(Arc::clone(&turn), Arc::clone(&ctx)),
            AfterStage::Turn => hook.on_after_turn(Arc::clone(&turn), Arc::clone(&ctx)),
        };
        async move { (hook.name().to_owned(), guarded(future, timeout).await) }
    });
    join_all(runs)
        .await
        .into_iter()
        .filter_map(|(hook, outcome)| {
            outcome.err().map(|outcome| HookFailure {
                hook,
                stage: stage.into(),
                message: outcome.to_string(),
            })
        })
        .collect()
}
