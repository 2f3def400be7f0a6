//! Warm-up: the next request's prefix (system prompt with the running summary, the history that fits, the
//! tool definitions) goes to the model ahead of time, built exactly as the turn will build it, so a model
//! with a prefix cache (the embedded brain) evaluates it while nobody waits. Models that do not warm up
//! (cloud endpoints: it would be billed) answer `None` and nothing is sent.
//!
//! Run when a character loads (start, switch, `set_llm`) and after each finished turn, once the history
//! is compacted: a new running summary changes the system prompt, and the next turn would otherwise
//! evaluate the whole conversation again while the user waits.

use tomo_llm::ChatMessage;

use super::character::Character;

/// Warms the prefix of the character's next turn. Failures only cost speed: logged, never reported.
pub(crate) async fn next_prefix(character: &Character) {
    let turn_id = character.next_turn_id();
    // The user message is not known yet; the history that fits beside it is the same unless it is huge.
    let (system, history) = character.prompt_context(turn_id, "").await;
    let messages: Vec<ChatMessage> = std::iter::once(ChatMessage::system(system))
        .chain(history)
        .collect();
    let tools = character.tools.definitions();
    match character.client.warm_up(&messages, &tools).await {
        Ok(Some(warmed)) => tracing::info!(
            prompt_tokens = warmed.prompt_tokens,
            cached_tokens = warmed.cached_tokens,
            ms = warmed.elapsed.as_millis() as u64,
            character = character.name(),
            "warm-up: the next turn's prefix is in the engine's cache"
        ),
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(%error, "warm-up failed; the next turn evaluates its prefix itself")
        }
    }
}
