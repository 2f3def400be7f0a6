//! `tomo profile check|schema`.

use std::path::Path;
use std::process::ExitCode;

use tomo_config::profile::{
    CheckContext, EmbeddedModelInfo, Severity, check_profile_with, profile_json_schema,
};
use tomo_models::ModelStore;
use tomo_runtime::Brain;

use tomo_plugin_api::trust::TrustDecision;
use tomo_runtime::EnvOptions;
use tomo_runtime::paths::plugins_dir_for;
use tomo_runtime::trust::profile_commands;

pub fn check(file: &Path, plugins_dir: Option<&Path>, data_dir: Option<&Path>) -> ExitCode {
    let plugins = plugins_dir_for(file, plugins_dir);
    // The embedded models the model store knows (and which are installed), for `engine = "embedded"`.
    let context = CheckContext {
        embedded_models: ModelStore::from_env().ok().map(|store| {
            Brain::known_models(&store)
                .into_iter()
                .map(|(name, installed)| EmbeddedModelInfo { name, installed })
                .collect()
        }),
    };
    let diagnostics = check_profile_with(file, &plugins, &context);
    list_commands(file, &plugins, data_dir);
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics.len() - errors;
    for diagnostic in &diagnostics {
        eprintln!("{diagnostic}");
    }
    if errors > 0 {
        eprintln!(
            "{}: {errors} error(s), {warnings} warning(s)",
            file.display()
        );
        ExitCode::FAILURE
    } else {
        println!("{}: ok ({warnings} warning(s))", file.display());
        ExitCode::SUCCESS
    }
}

/// The programs the profile's plugins would start, and whether each may: what a downloaded profile
/// would run is visible before it runs.
fn list_commands(file: &Path, plugins: &Path, data_dir: Option<&Path>) {
    let Ok(loaded) = tomo_config::profile::load_profile(file) else {
        return;
    };
    let options = EnvOptions {
        plugins_dir: Some(plugins.to_path_buf()),
        data_dir: data_dir.map(Path::to_path_buf),
        ..EnvOptions::default()
    };
    match profile_commands(file, &loaded.profile, &options) {
        Ok(commands) if commands.is_empty() => println!("{}: runs no programs", file.display()),
        Ok(commands) => {
            println!("{}: would run these programs:", file.display());
            for entry in commands {
                let state = match entry.decision {
                    Some(TrustDecision::Allowed) => "allowed",
                    Some(TrustDecision::Denied) => "declined: stays off",
                    None => "not yet allowed: asked before it first runs",
                };
                println!(
                    "  {}: {} [{state}]",
                    entry.command.plugin,
                    entry.command.command_line()
                );
            }
        }
        Err(error) => eprintln!("cannot tell which programs are allowed: {error}"),
    }
}

pub fn schema() -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(&profile_json_schema())?);
    Ok(ExitCode::SUCCESS)
}
