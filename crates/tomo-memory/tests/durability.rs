//! The database survives a process killed mid-write: a child process (this test binary, re-run in
//! writer mode) stores facts in a loop and reports each committed id; it is SIGKILLed while writing.
//! Reopened, the database passes SQLite's integrity check and holds every fact reported committed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use chrono::Utc;
use tomo_memory::{MemoryStore, NewFact};

const CHILD_ENV: &str = "TOMO_MEMORY_WRITER_DB";

/// Writer mode: only does something when the parent test runs it with `TOMO_MEMORY_WRITER_DB`.
#[test]
fn writer_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = MemoryStore::open(std::path::Path::new(&path)).unwrap();
    let stdout = std::io::stdout();
    for i in 0u64.. {
        // Several facts per transaction and a long text: the kill lands inside a write sooner or later.
        let facts: Vec<NewFact> = (0..4)
            .map(|k| NewFact {
                fact: format!("Fact {i}-{k}: {}", "the user likes long walks. ".repeat(40)),
                supersedes: None,
                embedding: Some(vec![0.1; 256]),
            })
            .collect();
        let ids = store.add("writer", &facts, Some(i), Utc::now()).unwrap();
        let mut out = stdout.lock();
        writeln!(
            out,
            "committed {}",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        )
        .unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn killed_writer_leaves_a_sound_database_with_every_committed_fact() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.sqlite");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut committed: Vec<i64> = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while committed.len() < 400 {
        let line = lines.next().expect("writer stopped early").unwrap();
        if let Some(ids) = line.strip_prefix("committed ") {
            committed.extend(ids.split(',').map(|id| id.parse::<i64>().unwrap()));
        }
    }
    // SIGKILL: no destructors, no flush, in the middle of the next transaction.
    child.kill().unwrap();
    child.wait().unwrap();
    // Lines already printed before the kill are committed too.
    for line in lines.map_while(Result::ok) {
        if let Some(ids) = line.strip_prefix("committed ") {
            committed.extend(ids.split(',').filter_map(|id| id.parse::<i64>().ok()));
        }
    }

    assert!(committed.len() >= 400);
    eprintln!("writer killed after {} committed facts", committed.len());
    let store = MemoryStore::open(&db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let stored: Vec<i64> = store
        .list("writer", true)
        .unwrap()
        .iter()
        .map(|f| f.id)
        .collect();
    for id in &committed {
        assert!(stored.contains(id), "committed fact {id} lost");
    }
    // Transactions are whole: facts come in complete groups of four.
    assert_eq!(
        stored.len() % 4,
        0,
        "a torn transaction left {} facts",
        stored.len()
    );
    // Full-text index consistent with the table.
    assert!(!store.search_text("writer", "walks", 3).unwrap().is_empty());
    // And the database still takes writes.
    store
        .add(
            "writer",
            &[NewFact {
                fact: "After the crash.".into(),
                supersedes: None,
                embedding: None,
            }],
            None,
            Utc::now(),
        )
        .unwrap();
}
