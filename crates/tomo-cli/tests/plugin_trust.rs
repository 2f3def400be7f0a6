//! A `plugins/` folder that came with a downloaded profile, for real: the `tomo` binary, the plugin's
//! program as a real child process, files on disk. The program never runs before the user allowed it,
//! `tomo profile check` shows it, and once allowed it sees none of the user's keys.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use tomo_testkit::{ScriptedServer, script};

const USER_KEY: &str = "sk-the-users-own-secret-key-123";
const OPENAI_KEY: &str = "sk-openai-key-of-the-user-456";

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn run(command: &mut Command) -> Output {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        command.stdin(Stdio::null()).output(),
    )
    .await
    .expect("tomo did not finish")
    .unwrap();
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn tomo(data: &Path, llm: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tomo"));
    command
        .env_remove("TOMO_PLUGINS_DIR")
        .env_remove("TOMO_LLM_MODEL")
        .env("TOMO_LLM_BASE_URL", llm)
        .env("TOMO_LLM_API_KEY", USER_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("TOMO_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    command
}

/// A downloaded character: `profiles/x.toml` and a `plugins/notes/` whose program writes its
/// environment to a file (and is no MCP server, so it then fails to start).
fn downloaded(root: &Path) -> (PathBuf, PathBuf) {
    let profiles = root.join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    let profile = profiles.join("x.toml");
    std::fs::write(
        &profile,
        "[character]\nname = \"X\"\nagent_id = \"x\"\npersona = \"p\"\n\n[llm]\nmodel = \"m\"\n\n[plugins]\nenabled = [\"notes\"]\n",
    )
    .unwrap();
    let dump = root.join("child-env.txt");
    let plugin = root.join("plugins/notes");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("plugin.toml"),
        format!(
            "[plugin]\nid = \"notes\"\ntype = \"tool\"\ndescription = \"notes\"\n\n[mcp]\ncommand = \"sh\"\nargs = [\"-c\", \"env > '{}'; exit 3\"]\nenv = {{ LOG = \"warn\" }}\n",
            dump.display()
        ),
    )
    .unwrap();
    (profile, dump)
}

#[tokio::test]
async fn a_downloaded_plugin_runs_nothing_until_allowed_and_never_sees_the_keys() {
    let llm = ScriptedServer::start(vec![
        script::text_reply("Hello."),
        script::text_reply("Hi."),
    ])
    .await
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let (profile, dump) = downloaded(root.path());

    // `profile check` shows what would run, before anything does.
    let check = run(tomo(&data, &llm.base_url())
        .args(["profile", "check"])
        .arg(&profile))
    .await;
    assert_eq!(check.code, Some(0), "{}", check.stderr);
    assert!(
        check.stdout.contains("notes: sh -c") && check.stdout.contains("not yet allowed"),
        "{}",
        check.stdout
    );

    // No terminal to ask on: the session asks its clients, and nothing runs.
    let chat = run(tomo(&data, &llm.base_url())
        .args(["chat", "--json", "--once", "hi", "--profile"])
        .arg(&profile))
    .await;
    assert_eq!(chat.code, Some(0), "{}\n{}", chat.stdout, chat.stderr);
    assert!(
        chat.stdout.contains("\"approval_requested\""),
        "{}",
        chat.stdout
    );
    assert!(chat.stdout.contains("\"run_command\""), "{}", chat.stdout);
    assert!(
        !dump.exists(),
        "the plugin's program ran without the user's yes"
    );

    // Allowed without a prompt (scripts, services), then it runs — with a cleared environment.
    let trust = run(tomo(&data, &llm.base_url())
        .args(["plugins", "trust", "notes", "--profile"])
        .arg(&profile))
    .await;
    assert_eq!(trust.code, Some(0), "{}", trust.stderr);
    assert!(trust.stdout.contains("allowed"), "{}", trust.stdout);
    let check = run(tomo(&data, &llm.base_url())
        .args(["profile", "check"])
        .arg(&profile))
    .await;
    assert!(check.stdout.contains("[allowed]"), "{}", check.stdout);
    let chat = run(tomo(&data, &llm.base_url())
        .args(["chat", "--json", "--once", "hi", "--profile"])
        .arg(&profile))
    .await;
    assert_eq!(chat.code, Some(0), "{}\n{}", chat.stdout, chat.stderr);
    assert!(
        !chat.stdout.contains("\"approval_requested\""),
        "{}",
        chat.stdout
    );
    let seen = std::fs::read_to_string(&dump).expect("the allowed program ran");
    assert!(seen.contains("LOG=warn"), "{seen}");
    assert!(seen.lines().any(|l| l.starts_with("PATH=")), "{seen}");
    for secret in [USER_KEY, OPENAI_KEY] {
        assert!(!seen.contains(secret), "the plugin saw a key:\n{seen}");
    }
    assert!(
        !seen.contains("TOMO_LLM_API_KEY") && !seen.contains("OPENAI_API_KEY"),
        "{seen}"
    );
    assert!(!seen.contains("TOMO_DATA_DIR"), "{seen}");
    // The trust file is the user's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("trusted_commands.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
