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

async fn guarded<T: Send + 'static>(
    future: BoxFuture<'static, Result<T, HookError>>,
    timeout: Duration,
) -> Result<T, String> {
    let mut task = tokio::spawn(future);
    match tokio::time::timeout(timeout, &mut task).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(error))) => Err(error.0),
        Ok(Err(join)) if join.is_panic() => Err("the hook panicked".to_owned()),
        Ok(Err(_)) => Err("the hook was cancelled".to_owned()),
        Err(_) => {
            task.abort();
            Err(format!("timed out after {timeout:?}"))
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
            Err(message) => failures.push(HookFailure {
                hook,
                stage: HookStage::BeforeTurn,
                message,
            }),
        }
    }
    (blocks, failures)
}

/// Runs `on_after_turn` or `on_after_playback` of every hook.
pub async fn after(
    hooks: &[Arc<dyn Hook>],
    stage: HookStage,
    turn: Arc<TurnRecord>,
    ctx: Arc<HookContext>,
    timeout: Duration,
) -> Vec<HookFailure> {
    let runs = hooks.iter().map(|hook| {
        let future = match stage {
            HookStage::AfterPlayback => hook.on_after_playback(Arc::clone(&turn), Arc::clone(&ctx)),
            HookStage::AfterTurn | HookStage::BeforeTurn => {
                hook.on_after_turn(Arc::clone(&turn), Arc::clone(&ctx))
            }
        };
        async move { (hook.name().to_owned(), guarded(future, timeout).await) }
    });
    join_all(runs)
        .await
        .into_iter()
        .filter_map(|(hook, outcome)| {
            outcome.err().map(|message| HookFailure {
                hook,
                stage,
                message,
            })
        })
        .collect()
}
