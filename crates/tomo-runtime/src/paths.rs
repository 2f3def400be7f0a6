//! Where a front end finds plugins and the user's Live2D models when not told.

use std::path::{Path, PathBuf};

/// Where plugins are when no folder is named: `plugins/` beside the profile's folder (the repository
/// layout: profiles/x.toml, plugins/<id>/), else — in a development checkout — the repository's own
/// `plugins/`, found from where this crate was built. Never the working directory's `./plugins`: a
/// folder that happens to be where the user stands must not decide what runs. When neither exists the
/// place beside the profile is returned (so the "no plugin" problems name where Tomo looked).
pub fn plugins_dir_for(profile: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    let profile = profile
        .canonicalize()
        .or_else(|_| std::path::absolute(profile))
        .unwrap_or_else(|_| profile.to_path_buf());
    let beside = profile
        .parent()
        .and_then(Path::parent)
        .map(|root| root.join("plugins"));
    if let Some(dir) = beside.as_ref().filter(|dir| dir.is_dir()) {
        return dir.clone();
    }
    if let Some(dir) = development_plugins() {
        return dir;
    }
    beside.unwrap_or_else(|| profile.with_file_name("plugins"))
}

/// The checkout this program was built from, if it is still there (`cargo run`, tests): its
/// `plugins/` holds the shipped manifests. An installed build finds nothing here.
fn development_plugins() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = repo.join("plugins");
    // The shipped `time` manifest marks the repository's folder (not just any `plugins/`).
    dir.join("time")
        .join("plugin.toml")
        .is_file()
        .then(|| dir.canonicalize().unwrap_or(dir))
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

    /// Beside the profile, else the checkout's own folder: a `plugins/` in the working directory is
    /// never chosen (a downloaded folder the user happens to stand in must not decide what runs).
    #[test]
    fn plugins_come_from_beside_the_profile_or_the_checkout_never_the_working_directory() {
        let root = tempfile::tempdir().unwrap();
        let profiles = root.path().join("profiles");
        std::fs::create_dir(&profiles).unwrap();
        let profile = profiles.join("hana.toml");
        std::fs::write(&profile, "").unwrap();
        // Nothing beside it: the repository this test was built from (never `./plugins`).
        let found = plugins_dir_for(&profile, None);
        assert!(found.is_absolute(), "{}", found.display());
        assert_eq!(found, development_plugins().unwrap());
        assert_ne!(found, PathBuf::from("plugins"));
        let beside = root.path().join("plugins");
        std::fs::create_dir(&beside).unwrap();
        assert_eq!(
            plugins_dir_for(&profile, None),
            beside.canonicalize().unwrap()
        );
        let explicit = root.path().join("mine");
        assert_eq!(plugins_dir_for(&profile, Some(&explicit)), explicit);
    }

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
