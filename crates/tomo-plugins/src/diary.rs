//! `diary`: the character's own diary. Tools to write and read it, and a hook that reminds the
//! character of its latest entries before each turn.
//!
//! Stored as JSON Lines at `<data_dir>/diary.jsonl`. `data_dir` comes from the tool/hook context and
//! already includes the agent id, so every character has its own diary and one plugin instance serves
//! them all. JSON Lines keeps appends cheap and makes a damaged line cost only that one entry.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use chrono::{DateTime, FixedOffset, Local};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use tomo_config::manifest::ToolLimits;
use tomo_llm::tools::{Tool, ToolContext, ToolError, ToolSpec};
use tomo_plugin_api::hooks::{Hook, HookContext, HookError};
use tomo_plugin_api::{PluginError, PluginParts, limited_spec, parse_config};

const PLUGIN: &str = "diary";
const FILE_NAME: &str = "diary.jsonl";
const DEFAULT_READ_LIMIT: u64 = 10;
const MAX_READ_LIMIT: u64 = 100;

/// Settings of the `diary` plugin.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiaryConfig {
    /// How many recent entries `on_before_turn` injects (0 disables injection).
    pub inject_recent: usize,
    /// Longest accepted entry, in characters.
    pub max_entry_chars: usize,
}

impl Default for DiaryConfig {
    fn default() -> Self {
        Self {
            inject_recent: 3,
            max_entry_chars: 2000,
        }
    }
}

/// One line of `diary.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiaryEntry {
    /// Local time of writing, with its UTC offset.
    pub time: DateTime<FixedOffset>,
    pub entry: String,
}

impl DiaryEntry {
    fn line(&self) -> String {
        format!("{}: {}", self.time.format("%Y-%m-%d %H:%M"), self.entry)
    }
}

pub(crate) fn instantiate(
    config: &toml::Table,
    limits: &ToolLimits,
) -> Result<PluginParts, PluginError> {
    let config: DiaryConfig = parse_config(PLUGIN, config)?;
    if config.max_entry_chars == 0 {
        return Err(PluginError::config(
            PLUGIN,
            "max_entry_chars",
            "must be at least 1",
        ));
    }
    let config = Arc::new(config);
    let write = DiaryWrite {
        spec: limited_spec(
            PLUGIN,
            ToolSpec::new(
                "diary_write",
                "Write an entry in your own diary: something worth remembering about today, the user, \
                 or how you feel. It is saved with the current date and time.",
                json!({
                    "type": "object",
                    "properties": {
                        "entry": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": config.max_entry_chars,
                            "description": "The diary entry text"
                        }
                    },
                    "required": ["entry"],
                    "additionalProperties": false
                }),
            ),
            limits,
        )?,
        config: Arc::clone(&config),
    };
    let read = DiaryRead {
        spec: limited_spec(
            PLUGIN,
            ToolSpec::new(
                "diary_read",
                "Read your own diary, most recent entries first. Optionally filter by a word or phrase.",
                json!({
                    "type": "object",
                    "properties": {
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_READ_LIMIT,
                            "description": format!("How many entries to return (default {DEFAULT_READ_LIMIT})")
                        },
                        "query": {
                            "type": "string",
                            "description": "Only entries containing this text (case-insensitive)"
                        }
                    },
                    "additionalProperties": false
                }),
            ),
            limits,
        )?,
    };
    let hook = DiaryHook { config };
    Ok(PluginParts {
        tools: vec![Arc::new(write), Arc::new(read)],
        hooks: vec![Arc::new(hook)],
        ..PluginParts::default()
    })
}

struct DiaryWrite {
    spec: ToolSpec,
    config: Arc<DiaryConfig>,
}

impl Tool for DiaryWrite {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, Result<String, ToolError>> {
        let max_chars = self.config.max_entry_chars;
        Box::pin(async move {
            let text = args
                .get("entry")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim();
            if text.is_empty() {
                return Err(ToolError::InvalidArguments(
                    "the diary entry is empty".into(),
                ));
            }
            let chars = text.chars().count();
            if chars > max_chars {
                return Err(ToolError::InvalidArguments(format!(
                    "the diary entry has {chars} characters; the limit is {max_chars}"
                )));
            }
            let entry = DiaryEntry {
                time: Local::now().fixed_offset(),
                entry: text.to_owned(),
            };
            append(&diary_path(&ctx.data_dir), &entry).await?;
            Ok(format!(
                "Saved to your diary ({}).",
                entry.time.format("%Y-%m-%d %H:%M")
            ))
        })
    }
}

struct DiaryRead {
    spec: ToolSpec,
}

impl Tool for DiaryRead {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, Result<String, ToolError>> {
        Box::pin(async move {
            let limit = match args.get("limit") {
                None | Some(Value::Null) => DEFAULT_READ_LIMIT,
                Some(v) => v
                    .as_u64()
                    .filter(|n| (1..=MAX_READ_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ToolError::InvalidArguments(format!(
                            "limit must be an integer from 1 to {MAX_READ_LIMIT}"
                        ))
                    })?,
            };
            let query = args
                .get("query")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|q| !q.is_empty())
                .map(str::to_lowercase);
            let entries = load(&diary_path(&ctx.data_dir))
                .await
                .map_err(ToolError::transient)?;
            let found: Vec<String> = entries
                .iter()
                .rev()
                .filter(|e| {
                    query
                        .as_ref()
                        .is_none_or(|q| e.entry.to_lowercase().contains(q))
                })
                .take(usize::try_from(limit).unwrap_or(usize::MAX))
                .map(DiaryEntry::line)
                .collect();
            Ok(match (found.is_empty(), &query) {
                (true, None) => "Your diary is empty.".to_owned(),
                (true, Some(q)) => format!("No diary entries contain \"{q}\"."),
                (false, _) => format!(
                    "{} diary entries, most recent first:\n{}",
                    found.len(),
                    found.join("\n")
                ),
            })
        })
    }
}

struct DiaryHook {
    config: Arc<DiaryConfig>,
}

impl Hook for DiaryHook {
    fn name(&self) -> &str {
        PLUGIN
    }

    fn on_before_turn(
        &self,
        _user_text: String,
        ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<Option<String>, HookError>> {
        let count = self.config.inject_recent;
        Box::pin(async move {
            if count == 0 {
                return Ok(None);
            }
            let entries = load(&diary_path(&ctx.data_dir)).await.map_err(HookError)?;
            if entries.is_empty() {
                return Ok(None);
            }
            // Oldest first within the window, so the block reads like the diary itself.
            let recent = &entries[entries.len().saturating_sub(count)..];
            let lines: Vec<String> = recent.iter().map(|e| format!("- {}", e.line())).collect();
            Ok(Some(format!(
                "Recent entries from {}'s diary:\n{}",
                ctx.character_name,
                lines.join("\n")
            )))
        })
    }
}

fn diary_path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// One async mutex per diary file, shared by every plugin instance in the process (a profile switch
/// may create a new instance while the old one still finishes a write).
fn file_lock(path: &Path) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Default::default);
    // A poisoned map only means another thread panicked while inserting; the map itself is intact.
    let mut locks = LOCKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Arc::clone(locks.entry(path.to_path_buf()).or_default())
}

/// Appends one entry as a whole line and syncs it to disk before returning.
async fn append(path: &Path, entry: &DiaryEntry) -> Result<(), ToolError> {
    let mut line = serde_json::to_string(entry)
        .map_err(|err| ToolError::failed(format!("cannot encode diary entry: {err}")))?;
    line.push('\n');
    let lock = file_lock(path);
    let _guard = lock.lock().await;
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || append_blocking(&path, &line))
        .await
        .map_err(|err| ToolError::failed(format!("diary write stopped: {err}")))?
        .map_err(|err| ToolError::transient(format!("cannot write the diary: {err}")))
}

fn append_blocking(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tomo_plugin_api::private_files::create_private_dir_all(dir)?;
    }
    tomo_plugin_api::private_files::append_lines_durably(path, line)
}

/// All readable entries in file order. A missing file is an empty diary; a damaged line is skipped
/// with a warning so it never costs the other entries.
async fn load(path: &Path) -> Result<Vec<DiaryEntry>, String> {
    let text = match tokio::fs::read(path).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(format!("cannot read the diary {}: {err}", path.display())),
    };
    Ok(parse_lines(path, &text))
}

fn parse_lines(path: &Path, text: &str) -> Vec<DiaryEntry> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .filter_map(|(index, line)| match serde_json::from_str::<DiaryEntry>(line) {
            Ok(entry) => Some(entry),
            Err(err) => {
                tracing::warn!(path = %path.display(), line = index + 1, %err, "skipping damaged diary line");
                None
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "diary_tests.rs"]
mod tests;
