//! `tomo profile check|schema`.

use std::path::Path;
use std::process::ExitCode;

use tomo_config::profile::{Severity, check_profile, profile_json_schema};

use tomo_runtime::paths::plugins_dir_for;

pub fn check(file: &Path, plugins_dir: Option<&Path>) -> ExitCode {
    let plugins = plugins_dir_for(file, plugins_dir);
    let diagnostics = check_profile(file, &plugins);
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
