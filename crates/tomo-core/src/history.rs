//! Conversation history per character, persisted as JSON Lines.
//!
//! Crash safety: the user message is appended (and fsynced) when a turn starts, the rest of the turn in one
//! write when it ends. A kill at any moment therefore loses at most the turn in flight; a torn last line is
//! skipped on load. The context sent to the model is bounded to the most recent turns.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::llm::ChatMessage;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot open history {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write history {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    pub turn_id: u64,
    pub at: DateTime<Utc>,
    #[serde(flatten)]
    pub message: ChatMessage,
    /// The assistant was cut off (interrupt or error) while saying this.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Part of a turn the character started on its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub proactive: bool,
}

#[derive(Debug)]
pub struct History {
    path: PathBuf,
    records: Vec<HistoryRecord>,
    /// Lines that could not be read on load (kept on disk, reported once).
    pub skipped_lines: usize,
}

impl History {
    /// Loads `<dir>/history.jsonl`, creating the directory if needed.
    pub fn open(dir: &Path) -> Result<Self, HistoryError> {
        let path = dir.join("history.jsonl");
        std::fs::create_dir_all(dir).map_err(|source| HistoryError::Open {
            path: path.clone(),
            source,
        })?;
        let mut records = Vec::new();
        let mut skipped_lines = 0;
        match File::open(&path) {
            Ok(file) => {
                for (number, line) in BufReader::new(file).lines().enumerate() {
                    let line = line.map_err(|source| HistoryError::Open {
                        path: path.clone(),
                        source,
                    })?;
                    if line.trim().is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<HistoryRecord>(&line) {
                        Ok(record) => records.push(record),
                        Err(error) => {
                            skipped_lines += 1;
                            tracing::warn!(path = %path.display(), line = number + 1, %error, "skipping unreadable history line");
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(HistoryError::Open { path, source }),
        }
        Ok(Self {
            path,
            records,
            skipped_lines,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn records(&self) -> &[HistoryRecord] {
        &self.records
    }

    /// The next free turn id (ids keep increasing across restarts).
    pub fn next_turn_id(&self) -> u64 {
        self.records
            .iter()
            .map(|r| r.turn_id)
            .max()
            .map_or(1, |id| id + 1)
    }

    /// Appends records durably (one write, then fsync) before adding them in memory.
    pub fn append(&mut self, records: Vec<HistoryRecord>) -> Result<(), HistoryError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut buffer = String::new();
        for record in &records {
            let line = serde_json::to_string(record).map_err(|e| HistoryError::Write {
                path: self.path.clone(),
                source: std::io::Error::other(e),
            })?;
            buffer.push_str(&line);
            buffer.push('\n');
        }
        let write_error = |source| HistoryError::Write {
            path: self.path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(write_error)?;
        file.write_all(buffer.as_bytes()).map_err(write_error)?;
        file.sync_data().map_err(write_error)?;
        self.records.extend(records);
        Ok(())
    }

    /// Messages of the last `max_turns` turns, repaired so that the server accepts them: an assistant
    /// tool call without its results (a crash mid-write) loses its calls; orphan tool results are dropped.
    pub fn context(&self, max_turns: usize) -> Vec<ChatMessage> {
        self.context_before(u64::MAX, max_turns)
    }

    /// Like [`History::context`], limited to turns before `turn_id` (the turn being built).
    pub fn context_before(&self, turn_id: u64, max_turns: usize) -> Vec<ChatMessage> {
        let mut turn_ids: Vec<u64> = self
            .records
            .iter()
            .map(|r| r.turn_id)
            .filter(|id| *id < turn_id)
            .collect();
        turn_ids.dedup();
        let keep_from = turn_ids.len().saturating_sub(max_turns);
        let first_kept = turn_ids.get(keep_from).copied().unwrap_or(u64::MAX);
        let recent: Vec<&HistoryRecord> = self
            .records
            .iter()
            .filter(|r| r.turn_id >= first_kept && r.turn_id < turn_id)
            .collect();
        repair(recent.iter().map(|r| r.message.clone()).collect())
    }
}

impl History {
    /// Turns with `after < turn_id < before`, oldest first, each as its (repaired) messages. Context
    /// compression uses it to see which turns are not yet in the running summary.
    pub fn turns_between(&self, after: u64, before: u64) -> Vec<(u64, Vec<ChatMessage>)> {
        let mut turns: Vec<(u64, Vec<ChatMessage>)> = Vec::new();
        for record in &self.records {
            if record.turn_id <= after || record.turn_id >= before {
                continue;
            }
            match turns.last_mut() {
                Some((id, messages)) if *id == record.turn_id => {
                    messages.push(record.message.clone())
                }
                _ => turns.push((record.turn_id, vec![record.message.clone()])),
            }
        }
        turns
            .into_iter()
            .map(|(id, messages)| (id, repair(messages)))
            .filter(|(_, messages)| !messages.is_empty())
            .collect()
    }
}

fn repair(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    let mut index = 0;
    while index < messages.len() {
        match &messages[index] {
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => {
                let mut results = Vec::new();
                let mut next = index + 1;
                while let Some(ChatMessage::Tool { tool_call_id, .. }) = messages.get(next) {
                    if tool_calls.iter().any(|c| &c.id == tool_call_id) {
                        results.push(messages[next].clone());
                    }
                    next += 1;
                }
                if results.len() == tool_calls.len() {
                    out.push(messages[index].clone());
                    out.extend(results);
                } else if let Some(text) = content.as_ref().filter(|t| !t.is_empty()) {
                    out.push(ChatMessage::assistant(text.clone()));
                }
                index = next;
            }
            ChatMessage::Tool { .. } => index += 1,
            other => {
                out.push(other.clone());
                index += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::llm::{FunctionCall, WireToolCall};

    fn record(turn_id: u64, message: ChatMessage) -> HistoryRecord {
        HistoryRecord {
            turn_id,
            at: Utc::now(),
            message,
            interrupted: false,
            proactive: false,
        }
    }

    #[test]
    fn survives_reopen_and_keeps_turn_ids_increasing() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::open(dir.path()).unwrap();
        assert_eq!(history.next_turn_id(), 1);
        history
            .append(vec![record(1, ChatMessage::user("hi"))])
            .unwrap();
        history
            .append(vec![record(1, ChatMessage::assistant("hello"))])
            .unwrap();
        let reopened = History::open(dir.path()).unwrap();
        assert_eq!(reopened.records().len(), 2);
        assert_eq!(reopened.next_turn_id(), 2);
        assert_eq!(
            reopened.context(10),
            vec![ChatMessage::user("hi"), ChatMessage::assistant("hello")]
        );
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::open(dir.path()).unwrap();
        history
            .append(vec![record(1, ChatMessage::user("kept"))])
            .unwrap();
        let mut file = OpenOptions::new()
            .append(true)
            .open(history.path())
            .unwrap();
        file.write_all(b"{\"turn_id\":2,\"at\":\"2026-").unwrap();
        let reopened = History::open(dir.path()).unwrap();
        assert_eq!(reopened.records().len(), 1);
        assert_eq!(reopened.skipped_lines, 1);
    }

    #[test]
    fn context_is_bounded_to_recent_turns() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::open(dir.path()).unwrap();
        for turn in 1..=5 {
            history
                .append(vec![
                    record(turn, ChatMessage::user(format!("q{turn}"))),
                    record(turn, ChatMessage::assistant(format!("a{turn}"))),
                ])
                .unwrap();
        }
        let context = history.context(2);
        assert_eq!(
            context,
            vec![
                ChatMessage::user("q4"),
                ChatMessage::assistant("a4"),
                ChatMessage::user("q5"),
                ChatMessage::assistant("a5")
            ]
        );
    }

    #[test]
    fn tool_calls_without_results_are_repaired() {
        let call = WireToolCall {
            id: "c1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "get_time".into(),
                arguments: "{}".into(),
            },
        };
        let messages = vec![
            ChatMessage::user("time?"),
            ChatMessage::Assistant {
                content: Some("Let me look.".into()),
                tool_calls: vec![call.clone()],
            },
            ChatMessage::user("hello?"),
            ChatMessage::Tool {
                tool_call_id: "zz".into(),
                content: "orphan".into(),
            },
        ];
        assert_eq!(
            repair(messages),
            vec![
                ChatMessage::user("time?"),
                ChatMessage::assistant("Let me look."),
                ChatMessage::user("hello?")
            ]
        );
        let complete = vec![
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![call],
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                content: "12:00".into(),
            },
        ];
        assert_eq!(repair(complete.clone()), complete);
    }
}
