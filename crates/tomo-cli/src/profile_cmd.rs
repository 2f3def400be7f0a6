//! `tomo profile check|schema`.

use std::path::Path;
use std::process::ExitCode;

use tomo_config::profile::{
    CheckContext, EmbeddedModelInfo, Severity, check_profile_with, profile_json_schema,
};
use tomo_runtime::Brain;
use tomo_speech::models::ModelStore;

use tomo_runtime::paths::plugins_dir_for;

pub fn check(file: &Path, plugins_dir: Option<&Path>) -> ExitCode {
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

pub fn schema() -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(&profile_json_schema())?);
    Ok(ExitCode::SUCCESS)
}
