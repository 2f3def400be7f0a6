//! `tomo memory list|search|forget` on a real database, isolated per character.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use chrono::Utc;
use tomo_memory::{MemoryStore, NewFact, database_path};

fn profile(dir: &Path, agent: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{agent}.toml"));
    std::fs::write(
        &path,
        format!(
            "[character]\nname = \"{agent}\"\nagent_id = \"{agent}\"\npersona = \"Test.\"\n\n[llm]\nmodel = \"m\"\n"
        ),
    )
    .unwrap();
    path
}

fn tomo(data: &Path, profile: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tomo"))
        .arg("memory")
        .args(args)
        .arg("--profile")
        .arg(profile)
        .arg("--data-dir")
        .arg(data)
        .env_remove("TOMO_DATA_DIR")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn fact(text: &str, supersedes: Option<i64>) -> NewFact {
    NewFact {
        fact: text.to_owned(),
        supersedes,
        embedding: None,
    }
}

#[test]
fn list_search_and_forget() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open(&database_path(dir.path())).unwrap();
    let ids = store
        .add(
            "hana",
            &[
                fact("The user lives in Paris.", None),
                fact("The user has a cat called Miso.", None),
            ],
            Some(1),
            Utc::now(),
        )
        .unwrap();
    store
        .add(
            "hana",
            &[fact("The user lives in Berlin.", Some(ids[0]))],
            Some(5),
            Utc::now(),
        )
        .unwrap();
    store
        .add(
            "kuro",
            &[fact("The user is called Ken.", None)],
            Some(1),
            Utc::now(),
        )
        .unwrap();
    drop(store);
    let hana = profile(dir.path(), "hana");

    let (ok, out) = tomo(dir.path(), &hana, &["list"]);
    assert!(ok, "{out}");
    assert!(out.contains("Berlin") && out.contains("Miso"), "{out}");
    assert!(!out.contains("Paris") && !out.contains("Ken"), "{out}");
    let (_, out) = tomo(dir.path(), &hana, &["list", "--all"]);
    assert!(
        out.contains("Paris") && out.contains("superseded by 3"),
        "{out}"
    );

    let (ok, out) = tomo(dir.path(), &hana, &["search", "where does the user live"]);
    assert!(ok);
    assert!(out.contains("Berlin") && !out.contains("Miso"), "{out}");

    let (ok, out) = tomo(dir.path(), &hana, &["forget", &ids[1].to_string()]);
    assert!(ok, "{out}");
    let (_, out) = tomo(dir.path(), &hana, &["list"]);
    assert!(!out.contains("Miso"), "{out}");
    // Kuro's fact ids are not Hana's to forget.
    let (ok, _) = tomo(dir.path(), &hana, &["forget", "4"]);
    assert!(!ok);

    let (ok, out) = tomo(dir.path(), &hana, &["forget", "--all"]);
    assert!(ok && out.contains("forgot 2"), "{out}");
    let (_, out) = tomo(dir.path(), &profile(dir.path(), "kuro"), &["list"]);
    assert!(out.contains("Ken"), "{out}");
}

/// The profile's `[plugins.memory]` says where the memories are: a custom database file, or a service.
#[test]
fn follows_the_profiles_memory_config() {
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("elsewhere").join("hana-memories.sqlite");
    std::fs::create_dir_all(custom.parent().unwrap()).unwrap();
    let store = MemoryStore::open(&custom).unwrap();
    store
        .add(
            "hana",
            &[fact("The user plays the cello.", None)],
            Some(1),
            Utc::now(),
        )
        .unwrap();
    drop(store);
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins");
    let run = |profile: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_tomo"))
            .args(["memory", "list", "--profile"])
            .arg(profile)
            .arg("--data-dir")
            .arg(dir.path())
            .arg("--plugins-dir")
            .arg(&plugins)
            .env_remove("TOMO_DATA_DIR")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };

    let sqlite = dir.path().join("custom.toml");
    std::fs::write(
        &sqlite,
        format!(
            "[character]\nname = \"Hana\"\nagent_id = \"hana\"\npersona = \"Test.\"\n\n[llm]\nmodel = \"m\"\n\n\
             [plugins]\nenabled = [\"memory\"]\n\n[plugins.memory]\ndatabase = {:?}\n",
            custom.display().to_string()
        ),
    )
    .unwrap();
    let (code, out) = run(&sqlite);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("The user plays the cello."), "{out}");

    let http = dir.path().join("remote.toml");
    std::fs::write(
        &http,
        "[character]\nname = \"Hana\"\nagent_id = \"hana\"\npersona = \"Test.\"\n\n[llm]\nmodel = \"m\"\n\n\
         [plugins]\nenabled = [\"memory\"]\n\n[plugins.memory]\nbackend = \"http\"\nbase_url = \"http://127.0.0.1:9/mem\"\n",
    )
    .unwrap();
    let (code, out) = run(&http);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("memory service at http://127.0.0.1:9/mem"),
        "{out}"
    );
    assert!(!out.contains("cello"), "{out}");
}
