//! Where a front end finds plugins and the user's Live2D models when not told.

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

/// The folder of switchable profiles when not told: the folder of the starting profile
/// (`profiles/hana.toml` → `profiles`; a bare `hana.toml` → `.`).
pub fn profiles_dir_for(profile: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    match profile.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The user's own Live2D models: `assets/live2d/` beside the profiles folder (the repository layout:
/// profiles/, assets/live2d/<folder>/), else `./assets/live2d`; `None` when neither exists (only the
/// models bundled with the UI are offered then). An explicit folder is taken as is.
pub fn live2d_models_dir_for(profiles_dir: &Path, explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return Some(dir.to_path_buf());
    }
    let beside = profiles_dir
        .parent()
        .map(|root| root.join("assets").join("live2d"));
    [beside, Some(PathBuf::from("assets/live2d"))]
        .into_iter()
        .flatten()
        .find(|dir| dir.is_dir())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn models_are_found_beside_the_profiles_folder() {
        let root = tempfile::tempdir().unwrap();
        let profiles = root.path().join("profiles");
        std::fs::create_dir(&profiles).unwrap();
        // Nothing beside the profiles: the working directory's own assets/live2d, if it has one.
        let cwd_models = Some(PathBuf::from("assets/live2d")).filter(|d| d.is_dir());
        assert_eq!(live2d_models_dir_for(&profiles, None), cwd_models);
        let models = root.path().join("assets/live2d");
        std::fs::create_dir_all(&models).unwrap();
        assert_eq!(live2d_models_dir_for(&profiles, None), Some(models));
        let explicit = root.path().join("mine");
        assert_eq!(
            live2d_models_dir_for(&profiles, Some(&explicit)),
            Some(explicit)
        );
    }
}
