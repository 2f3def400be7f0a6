//! Loading the profile a command was given, the way a compiler reports: warnings printed, errors
//! printed with file:line:column (exit code 2 follows).

use std::path::Path;

use tomo_config::profile::{Profile, load_profile};

/// Loads a profile, printing warnings; on errors prints them and returns `None`.
pub fn load_profile_or_report(path: &Path) -> Option<Profile> {
    match load_profile(path) {
        Ok(loaded) => {
            for warning in &loaded.warnings {
                eprintln!("{warning}");
            }
            Some(loaded.profile)
        }
        Err(error) => {
            eprintln!("{error}");
            None
        }
    }
}
