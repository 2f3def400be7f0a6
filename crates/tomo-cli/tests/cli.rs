//! The `tomo` binary end to end, with the shipped profiles and plugins, against the scripted server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tomo_testkit::{ScriptedServer, script};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn tomo(data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tomo"));
    command
        .env_remove("TOMO_LLM_BASE_URL")
        .env_remove("TOMO_LLM_MODEL")
        .env_remove("TOMO_LLM_API_KEY")
        .env_remove("TOMO_PLUGINS_DIR")
        .env("TOMO_DATA_DIR", data_dir)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    command
}

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn run(command: &mut Command) -> Output {
    let output = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("tomo hung")
        .unwrap();
    Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test]
async fn once_streams_the_answer_of_a_shipped_character_and_runs_a_builtin_tool() {
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("t1", "get_time", "{}")], 2),
        script::text_reply("[joy] It is tea time. Shall I put the kettle on?"),
    ])
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = run(tomo(data.path())
        .env("TOMO_LLM_BASE_URL", server.base_url())
        .args(["chat", "--once", "what time is it?", "--profile"])
        .arg(repo("profiles/hana.toml")))
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.contains("[get_time running]"), "{}", out.stdout);
    assert!(out.stdout.contains("[get_time done]"), "{}", out.stdout);
    assert!(out.stdout.contains("It is tea time."), "{}", out.stdout);
    assert!(
        !out.stdout.contains("[joy]"),
        "emotion tags are not shown: {}",
        out.stdout
    );
    let requests = server.requests();
    // Hana's model names an embedded model; the endpoint that overrides the brain gets that name (a
    // front end sets TOMO_LLM_MODEL for the server's own).
    assert_eq!(
        requests[0].body["model"], "qwen2.5-coder-1.5b",
        "model from the profile"
    );
    let tool = requests[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool["content"].as_str().unwrap().contains(':'),
        "a real time came back: {tool}"
    );
}

/// A shipped character is on the embedded brain, but an explicit endpoint (how every test and `tomo bench
/// voice` run) replaces it: with an empty model store nothing is installed and no engine is started.
#[tokio::test]
async fn an_endpoint_overrides_the_embedded_brain_without_installing_or_starting_it() {
    let server = ScriptedServer::start(vec![script::text_reply("[joy] Hello from the endpoint.")])
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let models = tempfile::tempdir().unwrap();
    let out = run(tomo(data.path())
        .env("TOMO_MODELS_DIR", models.path())
        .env("TOMO_LLM_BASE_URL", server.base_url())
        .args(["chat", "--once", "hello", "--profile"])
        .arg(repo("profiles/hana.toml")))
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("Hello from the endpoint."),
        "{}",
        out.stdout
    );
    // The turn (and Hana's memory extraction after it) went to the endpoint.
    let requests = server.requests();
    let asked = requests[0].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(user_words(&asked), "hello", "the turn went to the endpoint");
    assert!(
        asked.contains("It is now "),
        "Hana's clock came along: {asked}"
    );
    assert!(
        !out.stderr.contains("embedded brain"),
        "no engine was loaded: {}",
        out.stderr
    );
    let installed: Vec<_> = std::fs::read_dir(models.path()).unwrap().collect();
    assert!(installed.is_empty(), "nothing installed: {installed:?}");
}

#[tokio::test]
async fn json_mode_prints_one_event_per_line() {
    let server = ScriptedServer::start(vec![script::text_reply("First sentence. Second one!")])
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = run(tomo(data.path())
        .args([
            "chat",
            "--json",
            "--once",
            "hi",
            "--llm-model",
            "other-model",
            "--llm-base-url",
        ])
        .arg(server.base_url())
        .arg("--profile")
        .arg(repo("profiles/kuro.toml")))
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let sentences: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "sentence")
        .map(|e| e["sentence"]["display_text"].as_str().unwrap())
        .collect();
    assert_eq!(sentences, vec!["First sentence.", "Second one!"]);
    assert!(events.iter().any(|e| e["type"] == "turn_finished"));
    assert_eq!(
        server.requests()[0].body["model"],
        "other-model",
        "flag wins over profile"
    );
}

#[tokio::test]
async fn a_flag_wins_over_the_environment_and_an_unreachable_server_fails_clearly() {
    let server = ScriptedServer::start(vec![script::text_reply("Reached.")])
        .await
        .unwrap();
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!(
            "http://127.0.0.1:{}/v1",
            listener.local_addr().unwrap().port()
        )
    };
    let data = tempfile::tempdir().unwrap();
    let out = run(tomo(data.path())
        .env("TOMO_LLM_BASE_URL", &dead)
        .args(["chat", "--once", "hi", "--llm-base-url"])
        .arg(server.base_url())
        .arg("--profile")
        .arg(repo("profiles/hana.toml")))
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("Reached."));

    let out = run(tomo(data.path())
        .env("TOMO_LLM_BASE_URL", &dead)
        .args(["chat", "--once", "hi", "--profile"])
        .arg(repo("profiles/hana.toml")))
    .await;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stdout.contains("cannot reach the LLM server at"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn profile_check_reports_like_a_compiler() {
    let data = tempfile::tempdir().unwrap();
    let good = run(tomo(data.path())
        .args(["profile", "check"])
        .arg(repo("profiles/hana.toml")))
    .await;
    assert_eq!(good.code, Some(0), "{}", good.stderr);

    let bad = data.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[character]\nname = \"X\"\nagent_id = \"x\"\npersona = \"p\"\n\n[llm]\nmodel = \"m\"\ntemperature = \"hot\"\n",
    )
    .unwrap();
    let out = run(tomo(data.path()).args(["profile", "check"]).arg(&bad)).await;
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("bad.toml:8:15"), "{}", out.stderr);
    assert!(out.stderr.contains("llm.temperature"), "{}", out.stderr);

    let out = run(tomo(data.path())
        .args(["chat", "--once", "hi", "--profile"])
        .arg(&bad))
    .await;
    assert_eq!(
        out.code,
        Some(2),
        "a broken profile stops chat before it starts"
    );
    assert!(out.stderr.contains("bad.toml:8:15"), "{}", out.stderr);
}

#[tokio::test]
async fn history_survives_a_killed_process() {
    let server = ScriptedServer::start(vec![
        script::text_reply("Nice to meet you, Ada."),
        script::text_reply_with_delay(
            "Once upon a time there was a very slow story that never ended because",
            Duration::ZERO,
            Duration::from_millis(300),
        ),
        script::text_reply("Your name is Ada."),
    ])
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut child = tomo(data.path())
        .env("TOMO_LLM_BASE_URL", server.base_url())
        .args(["chat", "--profile"])
        .arg(repo("profiles/kuro.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"I am Ada.\n").await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            if line.contains("Nice to meet you") {
                break;
            }
        }
    })
    .await
    .expect("first answer");
    stdin.write_all(b"Tell me a story.\n").await.unwrap();
    server
        .wait_for_requests(2, Duration::from_secs(20))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    child.start_kill().unwrap(); // SIGKILL: no chance to flush anything
    child.wait().await.unwrap();

    let out = run(tomo(data.path())
        .env("TOMO_LLM_BASE_URL", server.base_url())
        .args(["chat", "--once", "What is my name?", "--profile"])
        .arg(repo("profiles/kuro.toml")))
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let messages = server.requests()[2].messages().to_vec();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert!(texts.contains(&"I am Ada."), "{texts:?}");
    assert!(texts.contains(&"Nice to meet you, Ada."), "{texts:?}");
    assert_eq!(user_words(texts.last().unwrap()), "What is my name?");
}

/// The user's words of a message as sent: after the `[memory context]` block (the time plugin puts the
/// clock there on every turn), if there is one.
fn user_words(content: &str) -> &str {
    content
        .rsplit_once("[/memory context]\n\n")
        .map_or(content, |(_, words)| words)
}
