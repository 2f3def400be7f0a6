//! The request a turn sends, built in one place: for the turn itself, and ahead of it in a voice turn's
//! pause (the anticipation: `LlmClient::anticipate` starts it, and the turn's identical request takes
//! the answer over). Both must build byte-identical requests, so both use these functions.

use std::sync::Arc;

use tomo_llm::ChatMessage;
use tomo_llm::tools::ToolRegistry;
use tomo_plugin_api::hooks::HookContext;

use super::character::Character;
use super::hooks::{self, HookFailure};
use super::prompt;

/// The context hooks see for a turn.
pub(crate) fn hook_context(character: &Character, turn_id: u64) -> Arc<HookContext> {
    Arc::new(HookContext {
        agent_id: character.agent_id().to_owned(),
        character_name: character.name().to_owned(),
        data_dir: character.data_dir.clone(),
        turn_id,
    })
}

/// The `on_before_turn` blocks for `user_text` (memory, diary, the clock), and the hooks that failed.
pub(crate) async fn memory_blocks(
    character: &Character,
    turn_id: u64,
    user_text: &str,
) -> (Vec<String>, Vec<HookFailure>) {
    hooks::before_turn(
        &character.hooks,
        user_text,
        hook_context(character, turn_id),
        character.hook_timeout,
    )
    .await
}

/// The messages of the request, and the tools to offer when they are not all of the character's.
pub(crate) struct Request {
    pub messages: Vec<ChatMessage>,
    /// Screen text is in the context: only the tools that keep data on the machine.
    pub offline_tools: Option<ToolRegistry>,
}

impl Request {
    pub fn tools<'a>(&'a self, character: &'a Character) -> &'a ToolRegistry {
        self.offline_tools.as_ref().unwrap_or(&character.tools)
    }
}

pub(crate) async fn build(
    character: &Character,
    turn_id: u64,
    user_text: &str,
    memory: &[String],
) -> Request {
    // Context compression: the system prompt carries the running summary of older turns, and the
    // verbatim history is what fits the token budget next to this user message (session/compress.rs).
    let (system, history) = character
        .prompt_context(turn_id, &prompt::user_message(user_text, memory))
        .await;
    let messages = prompt::build_messages(&system, history, user_text, memory);
    // Screen text in the context (this proactive turn's, or one still in the recent history): no tool
    // that can carry text off the machine is offered, unless its plugin allows it.
    let screen_in_context = messages.iter().any(|m| {
        matches!(m, ChatMessage::User { content } if content.contains(super::proactive::SCREEN_OPEN))
    });
    let offline_tools = screen_in_context.then(|| {
        let offline = character.tools.filtered(|spec| !spec.egress);
        let withheld = character.tools.names().len() - offline.names().len();
        if withheld > 0 {
            tracing::info!(
                withheld,
                "screen text in context: tools that send data out are withheld"
            );
        }
        offline
    });
    Request {
        messages,
        offline_tools,
    }
}

/// What the `on_before_turn` hooks gave for a turn's words: the turn uses them as they are instead of
/// asking the hooks again (hooks keep state, e.g. memory's recent utterances, and a second run could
/// differ: the clock moves on).
pub(crate) struct BeforeTurn {
    pub memory: Vec<String>,
    pub failures: Vec<HookFailure>,
}

/// A voice turn's request, started in its pause.
pub(crate) struct Anticipated {
    pub user_text: String,
    pub turn_id: u64,
    pub before_turn: BeforeTurn,
}

/// Starts the request a voice turn of `user_text` would send, while the end of the turn is still being
/// decided. Nothing is stored or shown: the turn, if it comes with these words, does all of that.
pub(crate) async fn anticipate(character: Arc<Character>, user_text: String) -> Anticipated {
    let turn_id = character.next_turn_id();
    let (memory, failures) = memory_blocks(&character, turn_id, &user_text).await;
    let request = build(&character, turn_id, &user_text, &memory).await;
    let tools = request.tools(&character).definitions();
    character.client.anticipate(request.messages, tools);
    Anticipated {
        user_text,
        turn_id,
        before_turn: BeforeTurn { memory, failures },
    }
}
