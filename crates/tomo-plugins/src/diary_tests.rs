//! Tests for the `diary` plugin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tokio_util::sync::CancellationToken;

use super::*;

struct Diary {
    write: Arc<dyn Tool>,
    read: Arc<dyn Tool>,
    hook: Arc<dyn Hook>,
}

fn diary(config: &str) -> Diary {
    let mut parts = instantiate(&config.parse().unwrap(), &ToolLimits::default()).unwrap();
    let read = parts.tools.pop().unwrap();
    let write = parts.tools.pop().unwrap();
    assert_eq!(write.spec().name, "diary_write");
    assert_eq!(read.spec().name, "diary_read");
    Diary {
        write,
        read,
        hook: parts.hooks.pop().unwrap(),
    }
}

fn ctx(dir: &Path) -> ToolContext {
    ToolContext {
        agent_id: "agent".into(),
        data_dir: dir.to_path_buf(),
        cancel: CancellationToken::new(),
    }
}

fn hook_ctx(dir: &Path) -> Arc<HookContext> {
    Arc::new(HookContext {
        agent_id: "agent".into(),
        character_name: "Mika".into(),
        data_dir: dir.to_path_buf(),
        turn_id: 1,
    })
}

impl Diary {
    async fn write(&self, dir: &Path, text: &str) -> Result<String, ToolError> {
        self.write.call(json!({ "entry": text }), ctx(dir)).await
    }

    async fn read(&self, dir: &Path, args: Value) -> String {
        self.read.call(args, ctx(dir)).await.unwrap()
    }
}

#[tokio::test]
async fn write_then_read_most_recent_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agents").join("mika");
    let d = diary("");
    assert_eq!(d.read(&dir, json!({})).await, "Your diary is empty.");
    for text in [
        "first walk in the park",
        "  rainy day  ",
        "the user likes cats",
    ] {
        let out = d.write(&dir, text).await.unwrap();
        assert!(out.starts_with("Saved to your diary"), "{out}");
    }
    let out = d.read(&dir, json!({})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "3 diary entries, most recent first:");
    assert!(lines[1].ends_with(": the user likes cats"), "{out}");
    assert!(
        lines[2].ends_with(": rainy day"),
        "entries are trimmed: {out}"
    );
    assert!(lines[3].ends_with(": first walk in the park"), "{out}");
    // Dates are shown: `YYYY-MM-DD HH:MM: text`.
    assert_eq!(lines[1].as_bytes()[4], b'-');
    assert_eq!(lines[1].as_bytes()[16], b':');

    let out = d.read(&dir, json!({ "limit": 2 })).await;
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(!out.contains("first walk"), "{out}");

    // The file is JSON Lines with one entry per line.
    let raw = std::fs::read_to_string(dir.join("diary.jsonl")).unwrap();
    assert_eq!(raw.lines().count(), 3);
    let entry: DiaryEntry = serde_json::from_str(raw.lines().next().unwrap()).unwrap();
    assert_eq!(entry.entry, "first walk in the park");
}

#[tokio::test]
async fn query_filters_case_insensitively() {
    let tmp = tempfile::tempdir().unwrap();
    let d = diary("");
    for text in [
        "Met a CAT today",
        "Cooked curry",
        "the cat slept on the keyboard",
    ] {
        d.write(tmp.path(), text).await.unwrap();
    }
    let out = d.read(tmp.path(), json!({ "query": "Cat" })).await;
    assert!(out.starts_with("2 diary entries"), "{out}");
    assert!(
        out.contains("keyboard") && out.contains("Met a CAT"),
        "{out}"
    );
    assert!(!out.contains("curry"), "{out}");
    let out = d.read(tmp.path(), json!({ "query": "dog" })).await;
    assert_eq!(out, "No diary entries contain \"dog\".");
}

#[tokio::test]
async fn rejects_empty_and_overlong_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let d = diary("max_entry_chars = 5");
    for text in ["", "   \n"] {
        let err = d.write(tmp.path(), text).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err:?}");
    }
    // Characters, not bytes: five multi-byte characters fit.
    d.write(tmp.path(), "日記です。").await.unwrap();
    let err = d.write(tmp.path(), "123456").await.unwrap_err();
    assert!(err.to_string().contains("limit is 5"), "{err}");
    assert_eq!(d.read(tmp.path(), json!({})).await.lines().count(), 2);
}

#[tokio::test]
async fn each_agent_has_its_own_diary() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let d = diary("");
    d.write(&a, "secret of a").await.unwrap();
    d.write(&b, "secret of b").await.unwrap();
    let out_a = d.read(&a, json!({})).await;
    let out_b = d.read(&b, json!({})).await;
    assert!(
        out_a.contains("secret of a") && !out_a.contains("secret of b"),
        "{out_a}"
    );
    assert!(
        out_b.contains("secret of b") && !out_b.contains("secret of a"),
        "{out_b}"
    );
}

#[tokio::test]
async fn damaged_lines_are_skipped_and_appends_stay_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let d = diary("");
    d.write(tmp.path(), "before damage").await.unwrap();
    let path = tmp.path().join("diary.jsonl");
    let mut raw = std::fs::read_to_string(&path).unwrap();
    raw.push_str("this is not json\n{\"time\": 5}\n");
    // A torn last line with no newline, as a crash mid-write could leave.
    raw.push_str("{\"time\":\"2026-01-01T00:00:00+00:00\",\"ent");
    std::fs::write(&path, raw).unwrap();

    d.write(tmp.path(), "after damage").await.unwrap();
    let out = d.read(tmp.path(), json!({})).await;
    assert!(out.starts_with("2 diary entries"), "{out}");
    assert!(
        out.contains("before damage") && out.contains("after damage"),
        "{out}"
    );
}

#[tokio::test]
async fn before_turn_injects_recent_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let d = diary("inject_recent = 2");
    let none = d
        .hook
        .on_before_turn("hi".into(), hook_ctx(tmp.path()))
        .await
        .unwrap();
    assert_eq!(none, None, "nothing to inject from an empty diary");

    for text in ["one", "two", "three"] {
        d.write(tmp.path(), text).await.unwrap();
    }
    let block = d
        .hook
        .on_before_turn("hi".into(), hook_ctx(tmp.path()))
        .await
        .unwrap()
        .unwrap();
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines[0], "Recent entries from Mika's diary:");
    assert_eq!(lines.len(), 3, "{block}");
    assert!(
        lines[1].starts_with("- 20") && lines[1].ends_with(": two"),
        "{block}"
    );
    assert!(lines[2].ends_with(": three"), "{block}");

    let off = diary("inject_recent = 0");
    assert_eq!(
        off.hook
            .on_before_turn("hi".into(), hook_ctx(tmp.path()))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_keep_every_line_intact() {
    let tmp = tempfile::tempdir().unwrap();
    // Two instances, as after a profile switch, writing to the same diary.
    let (d1, d2) = (Arc::new(diary("")), Arc::new(diary("")));
    let long = "x".repeat(1500);
    let mut tasks = Vec::new();
    for i in 0..64 {
        let d = if i % 2 == 0 {
            Arc::clone(&d1)
        } else {
            Arc::clone(&d2)
        };
        let dir = tmp.path().to_path_buf();
        let text = format!("entry {i} {long}");
        tasks.push(tokio::spawn(async move { d.write(&dir, &text).await }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let raw = std::fs::read_to_string(tmp.path().join("diary.jsonl")).unwrap();
    let entries: Vec<DiaryEntry> = raw
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 64);
    let mut seen: Vec<usize> = entries
        .iter()
        .map(|e| e.entry.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..64).collect::<Vec<_>>());
}

#[test]
fn config_errors_name_the_field() {
    let err = instantiate(
        &"inject_recent = \"three\"".parse().unwrap(),
        &ToolLimits::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { plugin, field, .. } if plugin == "diary" && field == "inject_recent"),
        "{err:?}"
    );
    assert!(err.to_string().contains("diary.inject_recent"), "{err}");

    let err = instantiate(
        &"inject_recnet = 2".parse().unwrap(),
        &ToolLimits::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { field, .. } if field == "inject_recnet"),
        "{err:?}"
    );

    let err = instantiate(
        &"inject_recent = -1".parse().unwrap(),
        &ToolLimits::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { field, .. } if field == "inject_recent"),
        "{err:?}"
    );

    let err = instantiate(
        &"max_entry_chars = 0".parse().unwrap(),
        &ToolLimits::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { field, .. } if field == "max_entry_chars"),
        "{err:?}"
    );
}
