//! The embedded memory store: one SQLite database per installation (`<data_root>/memory.sqlite`), every
//! row tagged with the character's `agent_id`. Every query filters on it, so two characters never see
//! each other's memories.
//!
//! Durability: WAL journal with `synchronous = FULL`, and every change is one transaction, so a process
//! killed mid-write leaves the database consistent with every committed fact in it.
//!
//! Facts are never edited in place: a fact that changed ("I moved to Berlin") is a new row, and the old
//! row gets `superseded_by` = the new id. Superseded facts stay for `tomo memory list --all` but are never
//! searched or injected.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use crate::embed::{cosine, decode_vector, encode_vector};

/// File name of the database inside the data root.
pub const DATABASE_FILE: &str = "memory.sqlite";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("memory database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("memory database {path}: cannot create its folder: {source}")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("memory database {path}: the store task failed: {message}")]
    Task { path: PathBuf, message: String },
}

/// One remembered fact.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub id: i64,
    pub agent_id: String,
    pub fact: String,
    pub created_at: DateTime<Utc>,
    /// The turn the fact was extracted from, when known.
    pub source_turn: Option<u64>,
    /// Id of the fact that replaced this one; `None` for current facts.
    pub superseded_by: Option<i64>,
}

impl Fact {
    /// `- 3 days ago: The user moved to Berlin.` — the line injected into the `[memory context]`.
    pub fn line(&self) -> String {
        crate::learned::line(&self.fact, Some(self.created_at))
    }
}

/// A fact to store, optionally replacing an older one.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFact {
    pub fact: String,
    pub supersedes: Option<i64>,
    pub embedding: Option<Vec<f32>>,
}

/// Handle to the database. Cheap to clone; the connection is shared behind a mutex and every call runs
/// on the blocking pool (SQLite calls block).
#[derive(Clone)]
pub struct MemoryStore {
    path: Arc<PathBuf>,
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("path", &self.path)
            .finish()
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS facts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id      TEXT    NOT NULL,
    fact          TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    source_turn   INTEGER,
    superseded_by INTEGER,
    embedding     BLOB
);
CREATE INDEX IF NOT EXISTS facts_by_agent ON facts (agent_id, superseded_by);
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5 (
    fact, content = 'facts', content_rowid = 'id',
    -- Porter stemming so 'live' finds 'lives' and 'moved' finds 'move'.
    tokenize = 'porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, fact) VALUES (new.id, new.fact);
END;
CREATE TRIGGER IF NOT EXISTS facts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, fact) VALUES ('delete', old.id, old.fact);
END;
";

const COLUMNS: &str = "id, agent_id, fact, created_at, source_turn, superseded_by";

fn row_to_fact(row: &rusqlite::Row<'_>) -> rusqlite::Result<Fact> {
    let created: String = row.get(3)?;
    let source_turn: Option<i64> = row.get(4)?;
    Ok(Fact {
        id: row.get(0)?,
        agent_id: row.get(1)?,
        fact: row.get(2)?,
        // Rows are only written by this module, in RFC 3339; a damaged date must not hide the fact.
        created_at: DateTime::parse_from_rfc3339(&created)
            .map(|d| d.with_timezone(&Utc))
            .unwrap_or_default(),
        source_turn: source_turn.and_then(|t| u64::try_from(t).ok()),
        superseded_by: row.get(5)?,
    })
}

/// Path of the installation's database: `<data_root>/memory.sqlite`.
pub fn database_path(data_root: &Path) -> PathBuf {
    data_root.join(DATABASE_FILE)
}

impl MemoryStore {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            tomo_plugin_api::private_files::create_private_dir_all(dir).map_err(|source| {
                StoreError::Folder {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        }
        let sqlite = |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sqlite)?;
        // The app, the CLI and background extraction may hold the file at once.
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite)?;
        // `journal_mode` answers with a row, so it is queried rather than executed.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(sqlite)?;
        conn.execute_batch("PRAGMA synchronous = FULL;")
            .map_err(sqlite)?;
        conn.execute_batch(SCHEMA).map_err(sqlite)?;
        // What the user told the character is theirs alone. SQLite gives its -wal/-shm files the
        // database file's permissions, so restricting the database covers them.
        if let Err(error) = tomo_plugin_api::private_files::restrict(path) {
            tracing::warn!(path = %path.display(), %error, "cannot make the memory database private");
        }
        Ok(Self {
            path: Arc::new(path.to_path_buf()),
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic mid-call cannot leave a half-applied change: every write is a transaction.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.to_path_buf(),
            source,
        }
    }

    /// Runs a blocking store call on the blocking pool.
    pub async fn run<T: Send + 'static>(
        &self,
        call: impl FnOnce(&MemoryStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || call(&store))
            .await
            .map_err(|e| StoreError::Task {
                path: self.path.to_path_buf(),
                message: e.to_string(),
            })?
    }

    /// Stores `facts` for `agent_id` in one transaction; a fact with `supersedes` marks that older fact
    /// (if it is the agent's and still current) as replaced. Returns the new ids.
    pub fn add(
        &self,
        agent_id: &str,
        facts: &[NewFact],
        source_turn: Option<u64>,
        at: DateTime<Utc>,
    ) -> Result<Vec<i64>, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let mut ids = Vec::with_capacity(facts.len());
        let turn = source_turn.and_then(|t| i64::try_from(t).ok());
        for new in facts {
            tx.execute(
                "INSERT INTO facts (agent_id, fact, created_at, source_turn, embedding) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    agent_id,
                    new.fact,
                    at.to_rfc3339(),
                    turn,
                    new.embedding.as_deref().map(encode_vector)
                ],
            )
            .map_err(|e| self.err(e))?;
            let id = tx.last_insert_rowid();
            if let Some(old) = new.supersedes {
                tx.execute(
                    "UPDATE facts SET superseded_by = ?1 \
                     WHERE id = ?2 AND agent_id = ?3 AND superseded_by IS NULL",
                    params![id, old, agent_id],
                )
                .map_err(|e| self.err(e))?;
            }
            ids.push(id);
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(ids)
    }

    /// The agent's facts, newest first; superseded ones only with `include_superseded`.
    pub fn list(&self, agent_id: &str, include_superseded: bool) -> Result<Vec<Fact>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {COLUMNS} FROM facts WHERE agent_id = ?1 AND (?2 OR superseded_by IS NULL) \
             ORDER BY id DESC"
        );
        let mut stmt = conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![agent_id, include_superseded], row_to_fact)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// One fact of the agent by id (current or superseded).
    pub fn get(&self, agent_id: &str, id: i64) -> Result<Option<Fact>, StoreError> {
        let conn = self.lock();
        let sql = format!("SELECT {COLUMNS} FROM facts WHERE agent_id = ?1 AND id = ?2");
        conn.query_row(&sql, params![agent_id, id], row_to_fact)
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Full-text search (FTS5, ranked by bm25) over the agent's current facts. Any word of `query` may
    /// match; words are quoted so user text can never be read as FTS syntax.
    pub fn search_text(
        &self,
        agent_id: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        let Some(expression) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let conn = self.lock();
        let sql = "SELECT f.id, f.agent_id, f.fact, f.created_at, f.source_turn, f.superseded_by \
                   FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid \
                   WHERE facts_fts MATCH ?1 AND f.agent_id = ?2 AND f.superseded_by IS NULL \
                   ORDER BY bm25(facts_fts) LIMIT ?3";
        let mut stmt = conn.prepare(sql).map_err(|e| self.err(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![expression, agent_id, limit], row_to_fact)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The agent's current facts with a stored embedding, by cosine similarity to `query` (best first).
    pub fn search_vector(
        &self,
        agent_id: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(Fact, f32)>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {COLUMNS}, embedding FROM facts \
             WHERE agent_id = ?1 AND superseded_by IS NULL AND embedding IS NOT NULL"
        );
        let mut stmt = conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![agent_id], |row| {
                let blob: Vec<u8> = row.get(6)?;
                Ok((row_to_fact(row)?, blob))
            })
            .map_err(|e| self.err(e))?;
        let mut scored = Vec::new();
        for row in rows {
            let (fact, blob) = row.map_err(|e| self.err(e))?;
            if let Some(score) = decode_vector(&blob).and_then(|v| cosine(query, &v)) {
                scored.push((fact, score));
            }
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(limit);
        Ok(scored)
    }

    /// Deletes one fact of the agent (and the link from facts it had replaced). Returns whether it existed.
    pub fn forget(&self, agent_id: &str, id: i64) -> Result<bool, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let deleted = tx
            .execute(
                "DELETE FROM facts WHERE id = ?1 AND agent_id = ?2",
                params![id, agent_id],
            )
            .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(deleted > 0)
    }

    /// Deletes every fact of the agent. Returns how many.
    pub fn forget_all(&self, agent_id: &str) -> Result<usize, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let deleted = tx
            .execute("DELETE FROM facts WHERE agent_id = ?1", params![agent_id])
            .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(deleted)
    }

    /// SQLite's own consistency check (`PRAGMA integrity_check`): "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let conn = self.lock();
        conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .map_err(|e| self.err(e))
    }
}

/// Words too common to say anything about which fact is meant.
pub(crate) const STOP_WORDS: &[&str] = &[
    "the", "and", "you", "your", "are", "was", "were", "what", "who", "how", "why", "when",
    "where", "did", "does", "that", "this", "with", "for", "have", "has", "had", "about", "from",
    "can", "could", "would", "should", "will", "tell", "know", "there", "their", "they", "them",
    "then", "than", "just", "like", "any", "all", "our", "its", "it's", "i'm", "not", "but", "yes",
    // Every extracted fact starts with "The user", so the word says nothing.
    "user",
];

/// `"berlin" OR "moved"` from free text: alphanumeric words of 3+ characters (any length for CJK),
/// without stop words; `None` when nothing is left.
pub fn fts_query(text: &str) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let lower = word.to_lowercase();
        let long_enough = lower.chars().count() >= 3 || !lower.is_ascii();
        if long_enough && !STOP_WORDS.contains(&lower.as_str()) && !words.contains(&lower) {
            words.push(lower);
        }
    }
    if words.is_empty() {
        return None;
    }
    Some(
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn fact(text: &str) -> NewFact {
        NewFact {
            fact: text.to_owned(),
            supersedes: None,
            embedding: None,
        }
    }

    #[test]
    fn search_finds_current_facts_of_the_agent_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open(&dir.path().join(DATABASE_FILE)).unwrap();
        let at = Utc::now();
        let ids = store
            .add("hana", &[fact("The user lives in Paris.")], Some(1), at)
            .unwrap();
        store
            .add("kuro", &[fact("The user lives in Tokyo.")], Some(1), at)
            .unwrap();
        store
            .add(
                "hana",
                &[NewFact {
                    supersedes: Some(ids[0]),
                    ..fact("The user moved to Berlin and lives there now.")
                }],
                Some(2),
                at,
            )
            .unwrap();
        let found = store.search_text("hana", "where do I live?", 5).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].fact.contains("Berlin"));
        let all = store.list("hana", true).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].superseded_by, Some(found[0].id));
        // Another agent's id cannot be superseded or forgotten through this agent.
        let kuro = store.list("kuro", false).unwrap();
        assert!(!store.forget("hana", kuro[0].id).unwrap());
        assert_eq!(store.list("kuro", false).unwrap().len(), 1);
        assert_eq!(store.forget_all("hana").unwrap(), 2);
        assert!(
            store
                .search_text("hana", "Berlin Paris", 5)
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn fts_query_quotes_words_and_drops_noise() {
        assert_eq!(
            fts_query("What's my cat's name? (NEAR \"x\")").as_deref(),
            Some("\"cat\" OR \"name\" OR \"near\"")
        );
        assert_eq!(fts_query("hi, is it?"), None);
    }
}
