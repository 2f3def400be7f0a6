//! Context compression: recent turns go to the model verbatim, older turns are folded by the LLM into a
//! running summary that is persisted per character (`<data_dir>/summary.json`, with the last turn it
//! covers). The summary is conversation state, not long-term memory: it is appended to the system
//! prompt as a "conversation so far" note.
//!
//! Invariants:
//! - A request's prompt stays under `[llm] context_budget_tokens`, estimated as characters / 4 (no
//!   tokenizer: the estimate only needs to be monotonic and roughly right; it is conservative for
//!   English and generous for CJK, so set the budget below the model's window).
//! - Nothing is dropped without being summarised first: the summary's cursor (`through_turn`) only
//!   advances over turns that were folded in, and a turn is left out of a prompt only when it is at or
//!   before that cursor. The one exception is a summariser failure at request time (the LLM is down):
//!   then the oldest unsummarised turns are left out of that one request, with a warning; they stay in
//!   `history.jsonl` and after the cursor, so the next successful summary still covers them.
//! - Summarising runs after a turn, while its output drains (off the hot path: a new user message
//!   cancels it, and the cursor simply has not moved). Only when a turn would otherwise have to leave out
//!   unsummarised turns does the request wait for a summary.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::history::History;
use tomo_llm::{ChatMessage, LlmClient, LlmError, Priority};

const FILE_NAME: &str = "summary.json";

/// The persisted running summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunningSummary {
    /// Every turn with an id up to this one is folded into `text` (0: none).
    pub through_turn: u64,
    pub text: String,
    pub updated_at: Option<DateTime<Utc>>,
}

impl RunningSummary {
    /// Loads `<data_dir>/summary.json`. A missing or unreadable file means "no summary yet": history
    /// still has every turn, so the summary is simply rebuilt from the start.
    pub fn load(data_dir: &Path) -> Self {
        let path = data_dir.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|error| {
                tracing::warn!(path = %path.display(), %error, "unreadable summary; rebuilding it from history");
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }

    /// Writes atomically (temporary file, fsync, rename): a crash leaves the old or the new summary.
    fn save(&self, data_dir: &Path) -> std::io::Result<()> {
        use std::io::Write as _;
        let path = data_dir.join(FILE_NAME);
        let tmp = data_dir.join(format!("{FILE_NAME}.tmp"));
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&json)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    }
}

/// Estimated tokens of a text: characters / 4, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Estimated tokens of a message, with a few tokens of per-message overhead (role, separators).
pub fn message_tokens(message: &ChatMessage) -> usize {
    4 + match message {
        ChatMessage::System { content } | ChatMessage::User { content } => estimate_tokens(content),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            estimate_tokens(content.as_deref().unwrap_or_default())
                + tool_calls
                    .iter()
                    .map(|c| {
                        estimate_tokens(&c.function.name) + estimate_tokens(&c.function.arguments)
                    })
                    .sum::<usize>()
        }
        ChatMessage::Tool { content, .. } => estimate_tokens(content),
    }
}

type Turn = (u64, Vec<ChatMessage>);

fn turn_tokens(turn: &Turn) -> usize {
    turn.1.iter().map(message_tokens).sum()
}

/// The system prompt with the running summary appended.
pub fn system_with_summary(system: &str, summary: &str) -> String {
    if summary.trim().is_empty() {
        return system.to_owned();
    }
    format!(
        "{system}\n\n[conversation so far]\n{}\n[/conversation so far]",
        summary.trim()
    )
}

pub(crate) struct Compressor {
    data_dir: PathBuf,
    character_name: String,
    budget: usize,
    max_turns: usize,
    summary: Mutex<RunningSummary>,
    /// One summariser at a time (after-turn maintenance and the rare request-time catch-up).
    running: tokio::sync::Mutex<()>,
}

impl Compressor {
    pub fn new(data_dir: &Path, character_name: &str, budget: usize, max_turns: usize) -> Self {
        Self {
            summary: Mutex::new(RunningSummary::load(data_dir)),
            data_dir: data_dir.to_path_buf(),
            character_name: character_name.to_owned(),
            budget: budget.max(256),
            max_turns: max_turns.max(1),
            running: tokio::sync::Mutex::new(()),
        }
    }

    fn current(&self) -> RunningSummary {
        match self.summary.lock() {
            Ok(summary) => summary.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// System prompt (with the summary) and the verbatim history for the request of `turn_id`, whose
    /// user message is `user_message`. Stays under the budget; see the module invariants.
    pub async fn context(
        &self,
        history: &Mutex<History>,
        client: &LlmClient,
        system: &str,
        user_message: &str,
        turn_id: u64,
    ) -> (String, Vec<ChatMessage>) {
        let mut caught_up = false;
        loop {
            let summary = self.current();
            let system = system_with_summary(system, &summary.text);
            let fixed = estimate_tokens(&system) + estimate_tokens(user_message) + 8;
            let turns = unsummarised(history, summary.through_turn, turn_id);
            let keep = newest_fitting(&turns, self.budget.saturating_sub(fixed), self.max_turns);
            if keep == turns.len() || caught_up {
                if keep < turns.len() {
                    tracing::warn!(
                        left_out = turns.len() - keep,
                        "context: the summary is behind; oldest unsummarised turns left out of this request"
                    );
                }
                let messages = turns[turns.len() - keep..]
                    .iter()
                    .flat_map(|(_, m)| m.iter().cloned())
                    .collect();
                return (system, messages);
            }
            // Some unsummarised turns do not fit: fold them in before the request (normally the
            // after-turn maintenance has done this already).
            caught_up = true;
            let through = turns[turns.len() - keep - 1].0;
            // The turn waits for this one: it must not stand aside for side requests.
            let fold = self.fold(
                history,
                client,
                system.len(),
                through,
                Priority::Conversation,
            );
            if let Err(error) = fold.await {
                tracing::warn!(%error, "context: cannot summarise old turns");
            }
        }
    }

    /// After-turn maintenance: when the unsummarised turns take more than half of the room left by the
    /// system prompt and summary, or outnumber `context_turns`, fold all but the newest (about a quarter
    /// of the room, at most half of `context_turns`) into the summary, so the next requests have
    /// headroom without waiting.
    pub async fn maintain(
        &self,
        history: &Mutex<History>,
        client: &LlmClient,
        system: &str,
        turn_id: u64,
    ) {
        let summary = self.current();
        let system_tokens = estimate_tokens(&system_with_summary(system, &summary.text));
        let room = self.budget.saturating_sub(system_tokens);
        let turns = unsummarised(history, summary.through_turn, turn_id + 1);
        let total: usize = turns.iter().map(turn_tokens).sum();
        if total <= room / 2 && turns.len() <= self.max_turns {
            return;
        }
        let keep = newest_fitting(&turns, room / 4, (self.max_turns / 2).max(1));
        if keep == turns.len() {
            return;
        }
        let through = turns[turns.len() - keep - 1].0;
        let fold = self.fold(history, client, system.len(), through, Priority::Background);
        if let Err(error) = fold.await {
            tracing::warn!(%error, "context: summary not updated; retried after the next turn");
        }
    }

    /// Folds every unsummarised turn up to `through` into the summary, in chunks that fit the budget,
    /// persisting after each chunk. `priority`: whether a turn waits for it.
    async fn fold(
        &self,
        history: &Mutex<History>,
        client: &LlmClient,
        system_chars: usize,
        through: u64,
        priority: Priority,
    ) -> Result<(), LlmError> {
        let _running = self.running.lock().await;
        // Another fold may have advanced the cursor while we waited.
        let mut summary = self.current();
        let turns = unsummarised(history, summary.through_turn, through + 1);
        // The summariser's own prompt (instructions, summary, chunk) must fit the budget too.
        let chunk_budget = self.budget.saturating_sub(system_chars / 4).max(256) / 2;
        let summary_words = (self.budget / 5).clamp(60, 600);
        let mut start = 0;
        while start < turns.len() {
            let mut end = start + 1;
            let mut tokens = turn_tokens(&turns[start]);
            while end < turns.len() && tokens + turn_tokens(&turns[end]) <= chunk_budget {
                tokens += turn_tokens(&turns[end]);
                end += 1;
            }
            let chunk = &turns[start..end];
            let messages =
                summariser_messages(&self.character_name, &summary.text, chunk, summary_words);
            let text = client.complete_as(&messages, priority).await?;
            if text.trim().is_empty() {
                return Err(LlmError::Config(
                    "the summariser answered nothing".to_owned(),
                ));
            }
            summary = RunningSummary {
                through_turn: chunk[chunk.len() - 1].0,
                text: text.trim().to_owned(),
                updated_at: Some(Utc::now()),
            };
            if let Err(error) = summary.save(&self.data_dir) {
                // Kept in memory for this session; history still has the turns if the app restarts.
                tracing::warn!(dir = %self.data_dir.display(), %error, "cannot save the conversation summary");
            }
            match self.summary.lock() {
                Ok(mut current) => *current = summary.clone(),
                Err(poisoned) => *poisoned.into_inner() = summary.clone(),
            }
            start = end;
        }
        Ok(())
    }
}

fn unsummarised(history: &Mutex<History>, after: u64, before: u64) -> Vec<Turn> {
    let history = match history.lock() {
        Ok(history) => history,
        Err(poisoned) => poisoned.into_inner(),
    };
    history.turns_between(after, before)
}

/// How many of the newest turns fit in `room` tokens and `max_turns`.
fn newest_fitting(turns: &[Turn], room: usize, max_turns: usize) -> usize {
    let mut used = 0;
    let mut keep = 0;
    for turn in turns.iter().rev() {
        let tokens = turn_tokens(turn);
        if keep == max_turns || used + tokens > room {
            break;
        }
        used += tokens;
        keep += 1;
    }
    keep
}

/// Marks the summariser's system prompt, so logs and tests can tell its requests apart.
pub const SUMMARISER_MARKER: &str = "You keep the running summary of a conversation";

fn summariser_messages(
    character_name: &str,
    previous: &str,
    turns: &[Turn],
    words: usize,
) -> Vec<ChatMessage> {
    let mut transcript = String::new();
    for (_, messages) in turns {
        for message in messages {
            let line = match message {
                ChatMessage::User { content } => format!("User: {content}"),
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut line = format!(
                        "{character_name}: {}",
                        content.as_deref().unwrap_or_default()
                    );
                    for call in tool_calls {
                        line.push_str(&format!(" (used the tool {})", call.function.name));
                    }
                    line
                }
                ChatMessage::Tool { content, .. } => {
                    format!(
                        "Tool result: {}",
                        content.chars().take(400).collect::<String>()
                    )
                }
                ChatMessage::System { .. } => continue,
            };
            transcript.push_str(line.trim());
            transcript.push('\n');
        }
    }
    let previous = if previous.trim().is_empty() {
        "(nothing yet)"
    } else {
        previous.trim()
    };
    vec![
        ChatMessage::system(format!(
            "{SUMMARISER_MARKER} between the user and {character_name}, a companion character. Fold the \
             new part of the conversation into the summary. Keep every fact the user shared (names, \
             places, dates, preferences, plans, feelings), promises and open threads; drop small talk. \
             Plain prose in the third person, at most {words} words. Answer with the summary only."
        )),
        ChatMessage::user(format!(
            "Summary so far:\n{previous}\n\nNew part of the conversation:\n{}",
            transcript.trim_end()
        )),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn turn(id: u64, chars: usize) -> Turn {
        (
            id,
            vec![
                ChatMessage::user("u".repeat(chars)),
                ChatMessage::assistant("a".repeat(chars)),
            ],
        )
    }

    #[test]
    fn keeps_the_newest_turns_that_fit() {
        let turns: Vec<Turn> = (1..=5).map(|id| turn(id, 40)).collect();
        // 2 messages x (4 + 10) tokens = 28 per turn.
        assert_eq!(turn_tokens(&turns[0]), 28);
        assert_eq!(newest_fitting(&turns, 60, 10), 2);
        assert_eq!(newest_fitting(&turns, 1000, 3), 3);
        assert_eq!(newest_fitting(&turns, 10, 3), 0);
    }

    #[test]
    fn summary_survives_reopen_and_a_broken_file_means_none() {
        let dir = tempfile::tempdir().unwrap();
        let summary = RunningSummary {
            through_turn: 7,
            text: "The user has a cat called Miso.".to_owned(),
            updated_at: Some(Utc::now()),
        };
        summary.save(dir.path()).unwrap();
        assert_eq!(RunningSummary::load(dir.path()), summary);
        std::fs::write(dir.path().join(FILE_NAME), b"{\"through_").unwrap();
        assert_eq!(RunningSummary::load(dir.path()), RunningSummary::default());
    }

    #[test]
    fn summary_goes_into_the_system_prompt() {
        assert_eq!(system_with_summary("You are Hana.", " "), "You are Hana.");
        let system = system_with_summary("You are Hana.", "They met on Monday.");
        assert!(
            system.ends_with("[conversation so far]\nThey met on Monday.\n[/conversation so far]")
        );
    }
}
