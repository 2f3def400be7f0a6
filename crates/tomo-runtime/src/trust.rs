//! The programs a profile's plugins would start, and asking the user about them before the session
//! starts (the terminal's y/N; the UI asks through the protocol instead). The answers live in the
//! installation's trust store (`tomo_plugin_api::trust`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use tomo_config::manifest::discover_plugins;
use tomo_config::profile::Profile;
use tomo_core::session::default_data_root;
use tomo_plugin_api::trust::{McpCommand, TrustDecision, TrustError, TrustStore};

use crate::env::{EnvOptions, environment};

/// A command an enabled plugin would run, and what the user said about it so far.
#[derive(Debug, Clone)]
pub struct ProfileCommand {
    pub command: McpCommand,
    /// `None`: never asked (the next start asks).
    pub decision: Option<TrustDecision>,
}

/// The trust store of the installation `options` point at.
pub fn trust_store(options: &EnvOptions) -> TrustStore {
    let root = options.data_dir.clone().unwrap_or_else(default_data_root);
    TrustStore::in_data_root(&root)
}

/// Every command the profile's enabled plugins would run (an `[mcp]` manifest that tries to replace a
/// built-in is left out: it never runs), with the answers so far.
pub fn profile_commands(
    profile_path: &Path,
    profile: &Profile,
    options: &EnvOptions,
) -> Result<Vec<ProfileCommand>, TrustError> {
    let prepared = environment(profile_path, profile, options);
    let factories = &prepared.env.plugin_factories;
    let (manifests, _) = discover_plugins(&prepared.env.plugins_dir);
    let store = trust_store(options);
    let mut commands = Vec::new();
    for id in &profile.plugins.enabled {
        let Some(manifest) = manifests.iter().find(|m| &m.id == id) else {
            continue;
        };
        let built_in = factories
            .iter()
            .any(|f| !f.serves_mcp() && f.id() == id.as_str());
        if built_in {
            continue;
        }
        if let Some(command) = McpCommand::of(manifest) {
            let decision = store.decision(&command)?;
            commands.push(ProfileCommand { command, decision });
        }
    }
    Ok(commands)
}

/// How the user is shown a command before answering.
pub fn describe(command: &McpCommand) -> String {
    let env = if command.env_names.is_empty() {
        "no variables of yours".to_owned()
    } else {
        format!("the variables {}", command.env_names.join(", "))
    };
    format!(
        "plugin `{}` wants to run a program on this computer:\n    {}\n  with {env} (declared in {})",
        command.plugin,
        command.command_line(),
        command.manifest.display()
    )
}

/// Asks y/N on the terminal about each command never asked about, and remembers the answers. Does
/// nothing without a terminal on both stdin and stderr (the session asks its clients then).
pub fn ask_on_terminal(commands: &[ProfileCommand], store: &TrustStore) -> std::io::Result<()> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(());
    }
    let stdin = std::io::stdin();
    ask(commands, store, &mut stdin.lock(), &mut std::io::stderr())
}

/// [`ask_on_terminal`] over any input and output (a test drives it with bytes).
pub fn ask(
    commands: &[ProfileCommand],
    store: &TrustStore,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    for entry in commands.iter().filter(|c| c.decision.is_none()) {
        write!(
            output,
            "{}\nAllow it (remembered for exactly this command)? [y/N] ",
            describe(&entry.command)
        )?;
        output.flush()?;
        let mut line = String::new();
        input.read_line(&mut line)?;
        let answer = line.trim().to_ascii_lowercase();
        let decision = if answer == "y" || answer == "yes" {
            TrustDecision::Allowed
        } else {
            TrustDecision::Denied
        };
        store
            .remember(&entry.command, decision)
            .map_err(std::io::Error::other)?;
        let verdict = match decision {
            TrustDecision::Allowed => "allowed",
            TrustDecision::Denied => "declined; `tomo plugins trust` allows it later",
        };
        writeln!(output, "  {verdict}")?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn entry(plugin: &str) -> ProfileCommand {
        ProfileCommand {
            command: McpCommand {
                plugin: plugin.into(),
                program: "npx".into(),
                args: vec!["-y".into(), format!("{plugin}-server")],
                env_names: vec!["GITHUB_TOKEN".into()],
                manifest: PathBuf::from(format!("plugins/{plugin}/plugin.toml")),
            },
            decision: None,
        }
    }

    #[test]
    fn each_new_command_is_asked_about_and_the_answer_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_data_root(dir.path());
        let (yes, no, silent) = (entry("github"), entry("shop"), entry("mail"));
        let mut out = Vec::new();
        ask(
            &[yes.clone(), no.clone(), silent.clone()],
            &store,
            &mut "y\nnope\n".as_bytes(),
            &mut out,
        )
        .unwrap();
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("npx -y github-server"), "{shown}");
        assert!(shown.contains("the variables GITHUB_TOKEN"), "{shown}");
        assert_eq!(shown.matches("[y/N]").count(), 3);
        let decision = |e: &ProfileCommand| store.decision(&e.command).unwrap();
        assert_eq!(decision(&yes), Some(TrustDecision::Allowed));
        assert_eq!(decision(&no), Some(TrustDecision::Denied));
        // No answer (end of input) is a no.
        assert_eq!(decision(&silent), Some(TrustDecision::Denied));
    }
}
