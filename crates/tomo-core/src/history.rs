//! Conversation history per character, persisted as JSON Lines.
//!
//! Crash safety: the user message is appended (and fsynced) when a turn starts, the rest of the turn in one
//! write when it ends. A kill at any moment therefore loses at most the turn in flight. On load every line
//! is decoded on its own: a torn line (half a record, half a multibyte character) is skipped and counted,
//! never fatal, and the next append starts on a fresh line so no later record is glued to it. The folder
//! is locked for this process (two instances would hand out the same turn ids) and private to the user.
//! The context sent to the model is bounded to the most recent turns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::data_lock::{DataDirLock, LockError};
use tomo_llm::ChatMessage;
use tomo_plugin_api::private_files;

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
    #[error(transparent)]
    Locked(#[from] LockError),
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
    _lock: Arc<DataDirLock>,
}

impl History {
    /// Loads `<dir>/history.jsonl`, creating the (private) directory if needed and locking it for this
    /// process.
    pub fn open(dir: &Path) -> Result<Self, HistoryError> {
        let path = dir.join("history.jsonl");
        let open_error = |source| HistoryError::Open {
            path: path.clone(),
            source,
        };
        private_files::create_private_dir_all(dir).map_err(open_error)?;
        let lock = DataDirLock::acquire(dir)?;
        let mut records = Vec::new();
        let mut skipped_lines = 0;
        match std::fs::read(&path) {
            Ok(bytes) => {
                for line in private_files::decode_lines(&bytes) {
                    let record = match line {
                        Ok((number, text)) => serde_json::from_str::<HistoryRecord>(text)
                            .map_err(|error| (number, error.to_string())),
                        Err(number) => Err((number, "not UTF-8 (a torn write)".to_owned())),
                    };
                    match record {
                        Ok(record) => records.push(record),
                        Err((line, error)) => {
                            skipped_lines += 1;
                            tracing::warn!(path = %path.display(), line, %error, "skipping unreadable history line");
                        }
                    }
                }
                // Older versions created these world-readable.
                for private in [dir, path.as_path()] {
                    if let Err(error) = private_files::restrict(private) {
                        tracing::warn!(path = %private.display(), %error, "cannot make private");
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
            _lock: lock,
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
        let write_error = |source| HistoryError::Write {
            path: self.path.clone(),
            source,
        };
        let mut buffer = String::new();
        for record in &records {
            let line =
                serde_json::to_string(record).map_err(|e| write_error(std::io::Error::other(e)))?;
            buffer.push_str(&line);
            buffer.push('\n');
        }
        private_files::append_lines_durably(&self.path, &buffer).map_err(write_error)?;
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
    use std::fs::OpenOptions;
    use std::io::Write;
    use tomo_llm::{FunctionCall, WireToolCall};

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

    /// A history holding one user record, and its file open for appending what a crash left.
    fn history_with_one_record(dir: &Path, text: &str) -> (History, std::fs::File) {
        let mut history = History::open(dir).unwrap();
        history
            .append(vec![record(1, ChatMessage::user(text))])
            .unwrap();
        let file = OpenOptions::new()
            .append(true)
            .open(history.path())
            .unwrap();
        (history, file)
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (_history, mut file) = history_with_one_record(dir.path(), "kept");
        file.write_all(b"{\"turn_id\":2,\"at\":\"2026-").unwrap();
        let reopened = History::open(dir.path()).unwrap();
        assert_eq!(reopened.records().len(), 1);
        assert_eq!(reopened.skipped_lines, 1);
    }

    #[test]
    fn a_torn_multibyte_character_at_the_end_does_not_stop_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let (history, mut file) = history_with_one_record(dir.path(), "café");
        // "é" is 0xC3 0xA9: the write stopped after its first byte.
        file.write_all(b"{\"turn_id\":2,\"at\":\"2026-01-01T00:00:00Z\",\"role\":\"user\",\"content\":\"caf\xc3")
            .unwrap();
        drop(history);
        let reopened = History::open(dir.path()).unwrap();
        assert_eq!(reopened.records().len(), 1);
        assert_eq!(reopened.records()[0].message, ChatMessage::user("café"));
        assert_eq!(reopened.skipped_lines, 1);
        assert_eq!(reopened.next_turn_id(), 2);
    }

    #[test]
    fn a_record_appended_after_a_torn_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (history, mut file) = history_with_one_record(dir.path(), "first");
        file.write_all(b"{\"turn_id\":2,\"at\":\"2026-").unwrap();
        drop(history);
        let mut reopened = History::open(dir.path()).unwrap();
        assert_eq!(reopened.skipped_lines, 1);
        reopened
            .append(vec![record(2, ChatMessage::user("second"))])
            .unwrap();
        drop(reopened);
        let again = History::open(dir.path()).unwrap();
        assert_eq!(
            again
                .records()
                .iter()
                .map(|r| r.message.clone())
                .collect::<Vec<_>>(),
            vec![ChatMessage::user("first"), ChatMessage::user("second")]
        );
        assert_eq!(
            again.skipped_lines, 1,
            "the torn line is counted, not glued"
        );
    }

    #[test]
    fn a_broken_line_in_the_middle_costs_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let good = |id: u64, text: &str| {
            serde_json::to_string(&record(id, ChatMessage::user(text))).unwrap()
        };
        let mut bytes = Vec::new();
        bytes.extend_from_slice(good(1, "one").as_bytes());
        bytes.extend_from_slice(b"\n\xff\xfe not utf-8\n{not json}\n");
        bytes.extend_from_slice(good(2, "two").as_bytes());
        bytes.push(b'\n');
        std::fs::write(&path, bytes).unwrap();
        let history = History::open(dir.path()).unwrap();
        assert_eq!(history.records().len(), 2);
        assert_eq!(history.skipped_lines, 2);
    }

    #[cfg(unix)]
    #[test]
    fn history_is_private_to_the_user() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("characters/hana");
        let mut history = History::open(&dir).unwrap();
        history
            .append(vec![record(1, ChatMessage::user("secret"))])
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&root.path().join("characters")), 0o700);
        assert_eq!(mode(history.path()), 0o600);
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
