//! The tray menu: show/hide, pet mode, mute microphone, switch character, quit.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Wry};
use tomo_protocol::Op;

use crate::pet;
use crate::state::AppState;

const SHOW: &str = "show";
const PET: &str = "pet";
const MUTE: &str = "mute";
const QUIT: &str = "quit";
/// "Start with my desktop" (packaging: see autostart.rs).
const AUTOSTART: &str = "autostart";
/// Menu ids of the character items: this prefix + the profile's file name.
const PROFILE_PREFIX: &str = "profile:";

/// The check items whose state changes from elsewhere too.
pub struct TrayItems {
    pet: CheckMenuItem<Wry>,
    mute: CheckMenuItem<Wry>,
    autostart: CheckMenuItem<Wry>,
}

/// Where the tray's icon file goes (on Linux the panel reads the icon from a file). The tray's own
/// default is `/tmp/tray-icon` when `$XDG_RUNTIME_DIR` is unset: one folder for every user of the
/// machine, so whoever made it first owns it — the next user's app could not write its icon there
/// (the package test met exactly that), and another local user could plant files in it. Ours is the
/// user's own: the runtime folder when there is one, else the app's cache folder, readable only by them.
fn icon_dir(app: &AppHandle) -> Option<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("tomo-tray"),
        None => app.path().app_cache_dir().ok()?.join("tray"),
    };
    match private_dir(&dir) {
        Ok(()) => Some(dir),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "cannot make the tray icon's folder");
            None
        }
    }
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

pub fn build(app: &AppHandle) -> tauri::Result<()> {
    let state = app.state::<AppState>();
    let show = MenuItem::with_id(app, SHOW, "Show / hide", true, None::<&str>)?;
    let pet = CheckMenuItem::with_id(app, PET, "Pet mode", true, state.pet().on, None::<&str>)?;
    let mute = CheckMenuItem::with_id(app, MUTE, "Mute microphone", true, false, None::<&str>)?;
    let characters = Submenu::with_id(app, "characters", "Character", true)?;
    for profile in state.profiles.list() {
        let id = format!("{PROFILE_PREFIX}{}", profile.file);
        characters.append(&MenuItem::with_id(
            app,
            id,
            &profile.name,
            true,
            None::<&str>,
        )?)?;
    }
    let autostart = CheckMenuItem::with_id(
        app,
        AUTOSTART,
        "Start with my desktop",
        true,
        crate::autostart::enabled_for_this_app(),
        None::<&str>,
    )?;
    let quit = MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?;
    let separator = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(
        app,
        &[
            &show,
            &pet,
            &mute,
            &characters,
            &autostart,
            &separator,
            &quit,
        ],
    )?;
    let mut tray = TrayIconBuilder::with_id("tomo")
        .tooltip("Tomo")
        .menu(&menu)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()));
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    if let Some(dir) = icon_dir(app) {
        tray = tray.temp_dir_path(dir);
    }
    tray.build(app)?;
    app.manage(TrayItems {
        pet,
        mute,
        autostart,
    });
    Ok(())
}

/// Keeps the tray's check mark in step when pet mode changes from the UI.
pub fn show_pet_mode(app: &AppHandle, on: bool) {
    if let Some(items) = app.try_state::<TrayItems>()
        && let Err(error) = items.pet.set_checked(on)
    {
        tracing::warn!(%error, "cannot update the tray's pet mode check");
    }
}

/// Keeps the tray's mute check in step with the session (which owns the mute state; the UI can change it).
pub fn show_mic_muted(app: &AppHandle, muted: bool) {
    if let Some(items) = app.try_state::<TrayItems>()
        && let Err(error) = items.mute.set_checked(muted)
    {
        tracing::warn!(%error, "cannot update the tray's mute check");
    }
}

/// Keeps the tray's "Start with my desktop" check in step with the autostart entry.
pub fn show_autostart(app: &AppHandle, on: bool) {
    if let Some(items) = app.try_state::<TrayItems>()
        && let Err(error) = items.autostart.set_checked(on)
    {
        tracing::warn!(%error, "cannot update the tray's autostart check");
    }
}

fn on_menu(app: &AppHandle, id: &str) {
    let state = app.state::<AppState>();
    match id {
        SHOW => {
            if let Ok(window) = pet::main_window(app) {
                let visible = window.is_visible().unwrap_or(true);
                let result = if visible {
                    window.hide()
                } else {
                    window.show()
                };
                if let Err(error) = result {
                    tracing::warn!(%error, "cannot show/hide the window");
                }
            }
        }
        PET => {
            let on = !state.pet().on;
            if let Err(error) = pet::set_pet_mode(app, on) {
                tracing::warn!(%error, "cannot switch pet mode");
            }
        }
        MUTE => {
            // The session owns the mute state: ask it, and the microphone and this check mark follow
            // its `mode_changed` event (see session.rs).
            let muted = !state.listen.muted.load(Ordering::SeqCst);
            send(app, Op::SetMicMuted { muted });
        }
        AUTOSTART => {
            let on = !crate::autostart::enabled_for_this_app();
            match crate::autostart::set_for_this_app(on) {
                Ok(()) => tracing::info!(on, "start with my desktop"),
                Err(error) => tracing::warn!(%error, "cannot change start with my desktop"),
            }
            // The file decides (GTK ticked the item itself when clicked).
            show_autostart(app, crate::autostart::enabled_for_this_app());
        }
        QUIT => {
            tauri::async_runtime::spawn(crate::quit(app.clone()));
        }
        other => {
            if let Some(file) = other.strip_prefix(PROFILE_PREFIX) {
                send(
                    app,
                    Op::SwitchProfile {
                        path: file.to_owned(),
                    },
                );
            }
        }
    }
}

fn send(app: &AppHandle, op: Op) {
    let state = app.state::<AppState>();
    let op = match crate::commands::checked_op(&state, op) {
        Ok(op) => op,
        Err(error) => {
            tracing::warn!(%error, "tray op refused");
            return;
        }
    };
    let Some(ops) = state.ops() else {
        // Still starting (models loading) or failed to start: there is no session to act on yet.
        tracing::warn!("tray op ignored: the session is not running yet");
        return;
    };
    tauri::async_runtime::spawn(async move {
        if ops.send(op).await.is_err() {
            tracing::warn!("the session has ended");
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(dir: &Path) -> u32 {
        std::fs::metadata(dir).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_icon_folder_is_made_for_its_user_only() {
        let root = tempfile::tempdir().unwrap();
        let fresh = root.path().join("cache/tomo/tray");
        private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        // A folder left open to others (an older version, a umask) is closed again.
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&open).unwrap();
        assert_eq!(mode(&open), 0o700);
    }
}
