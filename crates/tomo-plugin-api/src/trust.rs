//! Which programs the user agreed to run. A plugin's `[mcp]` section names a command that Tomo starts as
//! a child process; a `plugins/` folder that came with a downloaded profile must not run anything the
//! user never saw. So the first run of a command asks, and the answer is kept per installation in
//! `<data root>/trusted_commands.json` (0600), keyed by a fingerprint of what would run: the command,
//! its arguments and the names of the variables it is given. A manifest that changes any of them asks
//! again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tomo_config::manifest::PluginManifest;

use crate::private_files::{create_private_dir_all, restrict, write_private_atomic};

/// The file, under the data root.
pub const TRUST_FILE: &str = "trusted_commands.json";

/// A program a plugin would start, as the user is shown it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCommand {
    pub plugin: String,
    pub program: String,
    pub args: Vec<String>,
    /// Names of the variables it gets: those the manifest sets and those it passes through.
    pub env_names: Vec<String>,
    /// The manifest it came from.
    pub manifest: PathBuf,
}

impl McpCommand {
    /// The command `manifest` declares, if it declares one.
    pub fn of(manifest: &PluginManifest) -> Option<Self> {
        let server = manifest.mcp.as_ref()?;
        let mut env_names: Vec<String> = server
            .env
            .keys()
            .cloned()
            .chain(server.pass_env.iter().cloned())
            .collect();
        env_names.sort();
        env_names.dedup();
        Some(Self {
            plugin: manifest.id.clone(),
            program: server.command.clone(),
            args: server.args.clone(),
            env_names,
            manifest: manifest.source.clone(),
        })
    }

    /// Hex SHA-256 of the command, its arguments and its variable names (not their values: a token
    /// that changes must not ask again, a new variable must).
    pub fn fingerprint(&self) -> String {
        let canonical = serde_json::json!([self.program, self.args, self.env_names]).to_string();
        let digest = Sha256::digest(canonical.as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The command line as a shell would show it (arguments with spaces or quotes are quoted).
    pub fn command_line(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|part| shell_quote(part))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn shell_quote(part: &str) -> String {
    let plain = !part.is_empty()
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        part.to_owned()
    } else {
        format!("'{}'", part.replace('\'', r"'\''"))
    }
}

/// What the user answered for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustDecision {
    Allowed,
    Denied,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read the trusted commands in {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the trusted commands in {} are unreadable ({message}); delete the file to be asked again", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot save the trusted commands in {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    commands: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    decision: TrustDecision,
    /// For the person who opens the file.
    plugin: String,
    command: String,
    env: Vec<String>,
    at: chrono::DateTime<chrono::Utc>,
}

/// The user's answers, in one installation's data root.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    pub fn in_data_root(data_root: &Path) -> Self {
        Self {
            path: data_root.join(TRUST_FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The answer given for exactly this command, if any.
    pub fn decision(&self, command: &McpCommand) -> Result<Option<TrustDecision>, TrustError> {
        let fingerprint = command.fingerprint();
        Ok(self
            .read()?
            .commands
            .iter()
            .rev()
            .find(|entry| entry.fingerprint == fingerprint)
            .map(|entry| entry.decision))
    }

    /// Keeps `decision` for `command` (replacing an earlier answer).
    pub fn remember(
        &self,
        command: &McpCommand,
        decision: TrustDecision,
    ) -> Result<(), TrustError> {
        let mut file = self.read()?;
        let fingerprint = command.fingerprint();
        file.version = 1;
        file.commands
            .retain(|entry| entry.fingerprint != fingerprint);
        file.commands.push(Entry {
            fingerprint,
            decision,
            plugin: command.plugin.clone(),
            command: command.command_line(),
            env: command.env_names.clone(),
            at: chrono::Utc::now(),
        });
        let write_error = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            create_private_dir_all(dir).map_err(write_error)?;
        }
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| TrustError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_private_atomic(&self.path, &bytes).map_err(write_error)
    }

    fn read(&self) -> Result<TrustFile, TrustError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TrustFile::default()),
            Err(source) => {
                return Err(TrustError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        // A file someone else could write would let them trust commands for the user.
        if let Err(error) = restrict(&self.path) {
            tracing::warn!(path = %self.path.display(), %error, "cannot make the trusted commands private");
        }
        serde_json::from_slice(&bytes).map_err(|e| TrustError::Corrupt {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn command(args: &[&str], env: &[&str]) -> McpCommand {
        McpCommand {
            plugin: "calc".into(),
            program: "npx".into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env_names: env.iter().map(|a| (*a).to_owned()).collect(),
            manifest: PathBuf::from("plugins/calc/plugin.toml"),
        }
    }

    #[test]
    fn answers_are_kept_per_exact_command_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_data_root(&dir.path().join("tomo"));
        let calc = command(&["-y", "calc-server"], &["LOG"]);
        assert_eq!(store.decision(&calc).unwrap(), None);
        store.remember(&calc, TrustDecision::Allowed).unwrap();
        assert_eq!(store.decision(&calc).unwrap(), Some(TrustDecision::Allowed));
        // Another argument, another variable: asked again.
        assert_eq!(
            store
                .decision(&command(&["-y", "evil-server"], &["LOG"]))
                .unwrap(),
            None
        );
        assert_eq!(
            store
                .decision(&command(&["-y", "calc-server"], &["LOG", "OPENAI_API_KEY"]))
                .unwrap(),
            None
        );
        store.remember(&calc, TrustDecision::Denied).unwrap();
        assert_eq!(store.decision(&calc).unwrap(), Some(TrustDecision::Denied));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert_eq!(text.matches("\"fingerprint\"").count(), 1, "{text}");
        assert!(text.contains("npx -y calc-server"), "{text}");
    }

    #[test]
    fn a_corrupt_file_is_an_error_not_a_yes() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_data_root(dir.path());
        std::fs::write(store.path(), "{ not json").unwrap();
        assert!(matches!(
            store.decision(&command(&[], &[])),
            Err(TrustError::Corrupt { .. })
        ));
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let c = command(&["--name", "two words", "it's"], &[]);
        assert_eq!(c.command_line(), r"npx --name 'two words' 'it'\''s'");
    }
}
