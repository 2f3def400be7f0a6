//! Where the desktop app finds its characters, plugins and the user's own Live2D models, wherever it was
//! started from.
//!
//! - Installed (the Debian package): the bundled profiles and plugin manifests in the app's resource folder
//!   (`/usr/lib/Tomo/{profiles,plugins}`), the user's own profiles in `~/.config/tomo/profiles` and Live2D
//!   models in `<data>/live2d` (`~/.local/share/tomo/live2d`). The switcher lists the user's profiles and the
//!   bundled ones together; a user profile with a bundled one's file name replaces it.
//! - From source: `--profile` (or `profiles/hana.toml` in the working directory), as before, with the user's
//!   profiles listed after the ones beside it.
//!
//! Nothing here depends on the working directory once the package is installed: a launcher starts the app
//! from `$HOME` or `/`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use tomo_protocol::Op;
use tomo_server::ClientOpPolicy;
use tomo_server::profiles::{ProfileInfo, SwitchError};

/// The profile a fresh install starts with.
pub const DEFAULT_PROFILE: &str = "hana.toml";

/// What the command line (or environment) said; `None`: find it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub profile: Option<PathBuf>,
    pub profiles_dir: Option<PathBuf>,
    pub models_dir: Option<PathBuf>,
    pub plugins_dir: Option<PathBuf>,
    /// The app's resource folder (`tauri::utils::platform::resource_dir`), if it could be named.
    pub resource_dir: Option<PathBuf>,
    /// `~/.config/tomo` (`$XDG_CONFIG_HOME/tomo`).
    pub user_config_dir: Option<PathBuf>,
    /// The data root (history, memory, the user's Live2D models): `--data-dir`, `TOMO_DATA_DIR` or
    /// `~/.local/share/tomo`.
    pub data_root: PathBuf,
}

impl Request {
    /// The user's folders as the platform names them (`dirs`), `data_root` from `--data-dir` or the default.
    pub fn with_platform_dirs(data_dir: Option<PathBuf>) -> Self {
        Self {
            user_config_dir: dirs::config_dir().map(|dir| dir.join("tomo")),
            data_root: data_dir.unwrap_or_else(tomo_core::session::default_data_root),
            ..Self::default()
        }
    }
}

/// Where everything was found.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The profile the session starts with.
    pub profile: PathBuf,
    pub profiles: ProfileDirs,
    /// `None`: tomo-runtime's default (`plugins/` beside the profile's folder).
    pub plugins_dir: Option<PathBuf>,
    /// The user's own Live2D models, served ahead of the bundled ones.
    pub models_dir: Option<PathBuf>,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--profile` named it.
    Explicit,
    /// The bundled resources of an installed app.
    Bundled(PathBuf),
    /// `profiles/` in the working directory (a checkout).
    WorkingDir,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResourceError {
    #[error(
        "Tomo's characters are missing: no profile in {looked}. Reinstall the package (or start it with \
         --profile FILE)."
    )]
    NoProfile { looked: String },
    #[error(
        "Tomo cannot write to its data folder {path} ({reason}); it keeps your history, memory and \
         characters there. Make it writable, or point TOMO_DATA_DIR (or --data-dir) to a folder that is."
    )]
    DataNotWritable { path: PathBuf, reason: String },
}

/// Finds the start profile and the folders around it. Fails only when there is no profile to start with.
pub fn locate(request: &Request) -> Result<Layout, ResourceError> {
    let user_profiles = request.user_config_dir.as_ref().map(|d| d.join("profiles"));
    let user_models = request.data_root.join("live2d");
    if let Some(profile) = &request.profile {
        let primary = request
            .profiles_dir
            .clone()
            .unwrap_or_else(|| parent_or_dot(profile));
        let models_dir =
            tomo_runtime::paths::live2d_models_dir_for(&primary, request.models_dir.as_deref())
                .or_else(|| user_models.is_dir().then_some(user_models));
        return Ok(Layout {
            profile: profile.clone(),
            profiles: ProfileDirs::new([Some(primary), user_profiles].into_iter().flatten()),
            plugins_dir: request.plugins_dir.clone(),
            models_dir,
            origin: Origin::Explicit,
        });
    }
    let bundled = request
        .resource_dir
        .as_ref()
        .map(|dir| dir.join("profiles"));
    let working = PathBuf::from("profiles");
    let (dirs, origin) = match (&bundled, &request.resource_dir) {
        (Some(bundled), Some(resources))
            if bundled.is_dir() || !working.join(DEFAULT_PROFILE).is_file() =>
        {
            (
                [user_profiles.clone(), Some(bundled.clone())],
                Origin::Bundled(resources.clone()),
            )
        }
        _ => (
            [Some(working.clone()), user_profiles.clone()],
            Origin::WorkingDir,
        ),
    };
    let profiles = ProfileDirs::new(dirs.into_iter().flatten());
    let Some(profile) = profiles.start_profile() else {
        return Err(ResourceError::NoProfile {
            looked: profiles.describe(),
        });
    };
    let (plugins_dir, models_dir) = match &origin {
        Origin::Bundled(resources) => (
            request
                .plugins_dir
                .clone()
                .or_else(|| Some(resources.join("plugins"))),
            // Always the user's folder (even before it exists): a model put there works on the next switch.
            Some(request.models_dir.clone().unwrap_or(user_models)),
        ),
        _ => (
            request.plugins_dir.clone(),
            tomo_runtime::paths::live2d_models_dir_for(&working, request.models_dir.as_deref()),
        ),
    };
    Ok(Layout {
        profile,
        profiles,
        plugins_dir,
        models_dir,
        origin,
    })
}

/// Makes the user's folders of an installed app (so they can be found to drop files in). Best effort.
pub fn create_user_folders(request: &Request, layout: &Layout) {
    if !matches!(layout.origin, Origin::Bundled(_)) {
        return;
    }
    let user_profiles = request.user_config_dir.as_ref().map(|d| d.join("profiles"));
    for dir in [user_profiles, layout.models_dir.clone()]
        .into_iter()
        .flatten()
    {
        if let Err(error) = std::fs::create_dir_all(&dir) {
            tracing::warn!(dir = %dir.display(), %error, "cannot create a folder for your own files");
        }
    }
}

/// Checks the data root can be written (created if missing): history and memory go there, and a session
/// that cannot keep them should say so at once rather than lose them turn by turn.
pub fn check_writable(data_root: &Path) -> Result<(), ResourceError> {
    let fail = |error: std::io::Error| ResourceError::DataNotWritable {
        path: data_root.to_path_buf(),
        reason: error.to_string(),
    };
    std::fs::create_dir_all(data_root).map_err(fail)?;
    let probe = data_root.join(format!(".write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)
}

fn parent_or_dot(profile: &Path) -> PathBuf {
    match profile.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The folders characters come from, in order: the first folder holding a file name wins, so a user's
/// `hana.toml` replaces the bundled one, in the list and when switching alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileDirs {
    dirs: Vec<PathBuf>,
}

impl ProfileDirs {
    pub fn new(dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut unique: Vec<PathBuf> = Vec::new();
        for dir in dirs {
            if !unique.contains(&dir) {
                unique.push(dir);
            }
        }
        Self { dirs: unique }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Every profile that loads, each file name once (from the first folder that has it), sorted by it.
    pub fn list(&self) -> Vec<ProfileInfo> {
        let mut seen = BTreeSet::new();
        let mut all = Vec::new();
        for dir in &self.dirs {
            if !dir.is_dir() {
                continue;
            }
            let names = toml_files(dir);
            let listed = tomo_server::profiles::list(dir);
            all.extend(listed.into_iter().filter(|p| !seen.contains(&p.file)));
            seen.extend(names);
        }
        all.sort_by(|a, b| a.file.cmp(&b.file));
        all
    }

    /// A `switch_profile` path: a file name (or a path inside one of the folders) resolved in the first folder
    /// that has it. Nothing outside the folders is ever read.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, SwitchError> {
        let mut last = SwitchError::NoDirectory;
        for dir in &self.dirs {
            match tomo_server::profiles::resolve(Some(dir), requested) {
                Ok(path) => return Ok(path),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    /// The shared client-op policy (`tomo serve`'s) for `op`: a `switch_profile` is checked against the first
    /// folder that holds the file it names, so nothing outside the folders is read.
    pub fn policy_for(&self, op: &Op) -> ClientOpPolicy {
        let holder = match op {
            Op::SwitchProfile { path } => self
                .dirs
                .iter()
                .find(|dir| tomo_server::profiles::resolve(Some(dir), path).is_ok()),
            _ => None,
        };
        ClientOpPolicy {
            profiles_dir: holder.or(self.dirs.first()).cloned(),
        }
    }

    /// [`DEFAULT_PROFILE`] from the first folder that has it, else the first profile listed.
    fn start_profile(&self) -> Option<PathBuf> {
        self.dirs
            .iter()
            .map(|dir| dir.join(DEFAULT_PROFILE))
            .find(|path| path.is_file())
            .or_else(|| {
                let first = self.list().into_iter().next()?;
                self.resolve(&first.file).ok()
            })
    }

    /// "A, B (cannot read: permission denied)" for messages.
    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .dirs
            .iter()
            .map(|dir| match std::fs::read_dir(dir) {
                Ok(_) => dir.display().to_string(),
                Err(error) => format!("{} ({error})", dir.display()),
            })
            .collect();
        parts.join(", ")
    }
}

fn toml_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension() == Some(OsStr::new("toml")) && path.is_file())
        .filter_map(|path| Some(path.file_name()?.to_string_lossy().into_owned()))
        .collect()
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
