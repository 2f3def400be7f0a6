//! The user's own Live2D models (`assets/live2d/<folder>/`, Cubism 2 `*.model.json` or Cubism 3/4
//! `*.model3.json`) served to the webview at `live2d/...`, ahead of the models embedded with the UI.
//!
//! They are served through the app's own asset provider rather than a second URI scheme, so the model files
//! come from the page's origin: no CORS, no extra Content-Security-Policy sources, and a profile names the
//! same `assets/live2d/...` path in the desktop app and in `tomo serve`.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

use tauri::utils::assets::{AssetKey, AssetsIter, CspHash};
use tauri::{App, Assets, Runtime};

/// The URL folder the UI loads models from (see ui/src/profiles.ts `modelUrl`).
const URL_PREFIX: &str = "/live2d/";

/// Embedded UI assets, with `live2d/...` looked up in the user's models folder first.
pub struct WithUserModels<R: Runtime> {
    models_dir: Option<PathBuf>,
    embedded: Box<dyn Assets<R>>,
}

impl<R: Runtime> WithUserModels<R> {
    /// Wraps the context's assets. `models_dir` `None`: only the embedded models.
    pub fn install(context: &mut tauri::Context<R>, models_dir: Option<PathBuf>) {
        let embedded = context.set_assets(Box::new(NoAssets));
        context.set_assets(Box::new(Self {
            models_dir,
            embedded,
        }));
    }
}

impl<R: Runtime> Assets<R> for WithUserModels<R> {
    fn setup(&self, app: &App<R>) {
        self.embedded.setup(app);
    }

    fn get(&self, key: &AssetKey) -> Option<Cow<'_, [u8]>> {
        if let Some(path) = self
            .models_dir
            .as_deref()
            .and_then(|dir| user_model_file(dir, key.as_ref()))
        {
            match std::fs::read(&path) {
                Ok(bytes) => return Some(Cow::Owned(bytes)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "cannot read a Live2D model file");
                }
            }
        }
        self.embedded.get(key)
    }

    fn iter(&self) -> Box<AssetsIter<'_>> {
        self.embedded.iter()
    }

    fn csp_hashes(&self, html_path: &AssetKey) -> Box<dyn Iterator<Item = CspHash<'_>> + '_> {
        self.embedded.csp_hashes(html_path)
    }
}

/// The file in `models_dir` an asset key (`/live2d/<folder>/<file>`) names, if it is one there. Only plain
/// relative paths inside the folder: no `..`, no absolute paths, no Windows prefixes.
pub fn user_model_file(models_dir: &Path, key: &str) -> Option<PathBuf> {
    let rel = Path::new(key.strip_prefix(URL_PREFIX)?);
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let path = models_dir.join(rel);
    path.is_file().then_some(path)
}

/// Stands in for the embedded assets for the moment [`WithUserModels::install`] takes them out.
struct NoAssets;

impl<R: Runtime> Assets<R> for NoAssets {
    fn get(&self, _key: &AssetKey) -> Option<Cow<'_, [u8]>> {
        None
    }

    fn iter(&self) -> Box<AssetsIter<'_>> {
        Box::new(std::iter::empty())
    }

    fn csp_hashes(&self, _html_path: &AssetKey) -> Box<dyn Iterator<Item = CspHash<'_>> + '_> {
        Box::new(std::iter::empty())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_files_inside_the_models_folder_are_served() {
        let root = tempfile::tempdir().unwrap();
        let models = root.path().join("live2d");
        std::fs::create_dir_all(models.join("mine/textures")).unwrap();
        std::fs::write(models.join("mine/mine.model3.json"), "{}").unwrap();
        std::fs::write(models.join("mine/textures/t.png"), "png").unwrap();
        std::fs::write(root.path().join("secret.txt"), "secret").unwrap();

        assert_eq!(
            user_model_file(&models, "/live2d/mine/mine.model3.json"),
            Some(models.join("mine/mine.model3.json"))
        );
        assert_eq!(
            user_model_file(&models, "/live2d/mine/textures/t.png"),
            Some(models.join("mine/textures/t.png"))
        );
        for refused in [
            "/live2d/../secret.txt",
            "/live2d/mine/../../secret.txt",
            "/live2d//etc/passwd",
            "/live2d/mine",      // a folder, not a file
            "/live2d/",          // nothing
            "/live2d/nope.json", // not there: the embedded assets answer
            "/index.html",       // not a model path at all
            "/secret.txt",
        ] {
            assert_eq!(user_model_file(&models, refused), None, "{refused}");
        }
    }
}
