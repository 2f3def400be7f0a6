//! `tomo plugins trust|deny <id>`: answer, without a terminal prompt or a UI, whether a plugin's program
//! may run (for scripts, services and CI). The answer is kept for exactly the command the manifest
//! declares now; a changed manifest asks again.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use tomo_config::manifest::load_manifest;
use tomo_plugin_api::trust::{McpCommand, TrustDecision};
use tomo_runtime::SessionFlags;
use tomo_runtime::paths::plugins_dir_for;
use tomo_runtime::trust::{describe, trust_store};

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Allow the program a plugin's `[mcp]` section declares (what `tomo chat` would ask about).
    Trust(TrustArgs),
    /// Refuse it: the plugin stays off, and nobody is asked again until its manifest changes.
    Deny(TrustArgs),
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The plugin's id (its folder name).
    pub id: String,
    /// A profile: its plugins folder is where the plugin is looked for (or give --plugins-dir).
    #[arg(long, short)]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionFlags,
}

pub fn run(command: PluginsCommand) -> anyhow::Result<ExitCode> {
    let (args, decision) = match command {
        PluginsCommand::Trust(args) => (args, TrustDecision::Allowed),
        PluginsCommand::Deny(args) => (args, TrustDecision::Denied),
    };
    let options = args.session.env_options();
    let dir = match (&options.plugins_dir, &args.profile) {
        (Some(dir), _) => dir.clone(),
        (None, Some(profile)) => plugins_dir_for(profile, None),
        (None, None) => anyhow::bail!(
            "say where the plugin is: --profile <profile.toml> or --plugins-dir <dir>"
        ),
    };
    let manifest = load_manifest(&dir.join(&args.id).join("plugin.toml"))?;
    let Some(command) = McpCommand::of(&manifest) else {
        anyhow::bail!(
            "plugin `{}` runs no program (it has no [mcp] section): nothing to allow",
            args.id
        );
    };
    trust_store(&options).remember(&command, decision)?;
    let verdict = match decision {
        TrustDecision::Allowed => "allowed",
        TrustDecision::Denied => "declined",
    };
    println!("{}\n{verdict}", describe(&command));
    Ok(ExitCode::SUCCESS)
}
