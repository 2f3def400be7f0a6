//! Where a front end finds plugins when not told.

use std::path::{Path, PathBuf};

/// `plugins/` beside the profile's folder (the repository layout: profiles/x.toml, plugins/<id>/),
/// else `./plugins`.
pub fn plugins_dir_for(profile: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    let beside = profile
        .parent()
        .and_then(Path::parent)
        .map(|root| root.join("plugins"));
    match beside {
        Some(dir) if dir.is_dir() => dir,
        _ => PathBuf::from("plugins"),
    }
}
