//! `tomo memory`: see and delete what a character remembers (the embedded `sqlite` backend; memories of
//! an external service are managed by that service). The memory plugin's effective config (its manifest's
//! defaults plus the profile's `[plugins.memory]` overrides) says where they are.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use tomo_config::manifest::{effective_config, load_manifest};
use tomo_config::profile::{Profile, load_profile};
use tomo_core::session::default_data_root;
use tomo_memory::{Backend, Fact, MemoryConfig, MemoryStore, database_path};

use tomo_runtime::paths::plugins_dir_for;

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// The character profile: its `character.agent_id` names the memory space.
    #[arg(long, short, global = true)]
    pub profile: Option<PathBuf>,
    /// Data root holding `memory.sqlite` (default: the platform data dir).
    #[arg(long, env = "TOMO_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Plugin manifests folder (default: `plugins/` next to the profile's folder, else ./plugins).
    #[arg(long, env = "TOMO_PLUGINS_DIR", global = true)]
    pub plugins_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List remembered facts, newest first.
    List {
        /// Include facts that were superseded by newer ones.
        #[arg(long)]
        all: bool,
    },
    /// Full-text search in the character's current facts.
    Search {
        query: String,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Delete one fact by id, or every fact of the character with --all.
    Forget {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<i64>,
        #[arg(long)]
        all: bool,
    },
}

pub fn run(args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let Some(profile_path) = args.profile else {
        anyhow::bail!("--profile is required: it names whose memories to show");
    };
    let profile = match load_profile(&profile_path) {
        Ok(loaded) => loaded.profile,
        Err(error) => {
            eprintln!("{error}");
            return Ok(ExitCode::from(2));
        }
    };
    let config = memory_config(&profile, &profile_path, args.plugins_dir.as_deref())?;
    let agent = profile.character.agent_id;
    if config.backend == Backend::Http {
        let space = Some(config.agent_id.as_str())
            .filter(|a| !a.is_empty())
            .unwrap_or(&agent);
        eprintln!(
            "{}: {agent}'s memories live in the memory service at {} (user {:?}, space {space:?}); \
             manage them there",
            profile_path.display(),
            config.base_url,
            config.user_id
        );
        return Ok(ExitCode::from(2));
    }
    let path = if config.database.is_empty() {
        database_path(&args.data_dir.unwrap_or_else(default_data_root))
    } else {
        PathBuf::from(&config.database)
    };
    if !path.exists() {
        println!(
            "{agent} remembers nothing yet ({} does not exist)",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let store = MemoryStore::open(&path)?;
    match args.command {
        MemoryCommand::List { all } => print_facts(&store.list(&agent, all)?),
        MemoryCommand::Search { query, limit } => {
            print_facts(&store.search_text(&agent, &query, limit)?)
        }
        MemoryCommand::Forget { all: true, .. } => {
            let n = store.forget_all(&agent)?;
            println!("forgot {n} fact(s) of {agent}");
        }
        MemoryCommand::Forget { id, .. } => {
            let id = id.context("an id or --all is required")?;
            if store.forget(&agent, id)? {
                println!("forgot fact {id}");
            } else {
                eprintln!("{agent} has no fact {id}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The memory plugin's settings for this character, as a session would use them.
fn memory_config(
    profile: &Profile,
    profile_path: &Path,
    plugins_dir: Option<&Path>,
) -> anyhow::Result<MemoryConfig> {
    let manifest_path = plugins_dir_for(profile_path, plugins_dir)
        .join("memory")
        .join("plugin.toml");
    let overrides = profile.plugins.overrides.get("memory");
    let table = match load_manifest(&manifest_path) {
        Ok(manifest) => {
            let (table, diagnostics) = effective_config(&manifest, overrides);
            for diagnostic in diagnostics {
                eprintln!("{}: {diagnostic}", profile_path.display());
            }
            table
        }
        // Without the manifest the profile's overrides still say where the memories are.
        Err(error) => {
            tracing::debug!(%error, "memory manifest not found; using its built-in defaults");
            overrides.cloned().unwrap_or_default()
        }
    };
    MemoryConfig::from_table(&table)
        .with_context(|| format!("{}: [plugins.memory]", profile_path.display()))
}

fn print_facts(facts: &[Fact]) {
    for fact in facts {
        let status = match fact.superseded_by {
            Some(newer) => format!("  (superseded by {newer})"),
            None => String::new(),
        };
        println!(
            "{:>5}  {}  {}{status}",
            fact.id,
            fact.created_at.format("%Y-%m-%d"),
            fact.fact
        );
    }
}
