//! The main window, created from tauri.conf.json's `main` entry (`"create": false` there, so it is made
//! here). The webview keeps its cache and storage in the app's local data folder
//! (`~/.local/share/dev.tomo.desktop`); when that folder cannot be made, the webview gets a temporary one
//! instead, because the window must come up to say what is wrong (see startup.rs) rather than the app
//! failing before it has a window.

use tauri::{App, Manager, WebviewWindowBuilder};

pub fn create(app: &App) -> tauri::Result<()> {
    let Some(config) = app
        .config()
        .app
        .windows
        .iter()
        .find(|window| window.label == crate::pet::MAIN_WINDOW)
        .cloned()
    else {
        return Err(tauri::Error::WindowNotFound);
    };
    let mut builder = WebviewWindowBuilder::from_config(app.handle(), &config)?;
    let usable = app
        .path()
        .app_local_data_dir()
        .map_err(|error| error.to_string())
        .and_then(|dir| match std::fs::create_dir_all(&dir) {
            Ok(()) => Ok(dir),
            Err(error) => Err(format!("{}: {error}", dir.display())),
        });
    if let Err(problem) = usable {
        let fallback =
            std::env::temp_dir().join(format!("tomo-desktop-webview-{}", std::process::id()));
        tracing::warn!(%problem, fallback = %fallback.display(), "the webview's data folder cannot be made; using a temporary one");
        builder = builder.data_directory(fallback);
    }
    builder.build()?;
    Ok(())
}
