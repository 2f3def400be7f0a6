//! The commands the webview may call (each granted in capabilities/default.json). Typed with specta; the
//! TypeScript side is the generated `ui/src/bindings.ts`.

use tauri::{AppHandle, State};
use tomo_protocol::Op;
use tomo_server::profiles::ProfileInfo;

use crate::pet::{self, HitRegion};
use crate::replay::EventsSince;
use crate::state::AppState;

/// Sends an op to the session, checked by [`checked_op`] (`shutdown` is `quit`).
#[tauri::command]
#[specta::specta]
pub async fn send_op(state: State<'_, AppState>, op: Op) -> Result<(), String> {
    let op = checked_op(&state, op)?;
    let ops = state.ops().ok_or("the session is not running (yet)")?;
    ops.send(op)
        .await
        .map_err(|_| "the session has ended".to_owned())
}

/// What the UI and the tray may send: `tomo serve`'s client policy (no `shutdown`, profiles only from
/// the profiles directory, resolved to an absolute path there).
pub fn checked_op(state: &AppState, op: Op) -> Result<Op, String> {
    // Packaging: `switch_profile` is checked against the folder (bundled or the user's) that holds it.
    state
        .profiles
        .policy_for(&op)
        .check(op)
        .map_err(|e| e.to_string())
}

/// Every kept session event after `last_seq` (0: from the start): what a reloaded webview missed.
#[tauri::command]
#[specta::specta]
pub fn events_since(state: State<'_, AppState>, last_seq: u64) -> EventsSince {
    state.replay.since(last_seq)
}

#[tauri::command]
#[specta::specta]
pub fn list_profiles(state: State<'_, AppState>) -> Vec<ProfileInfo> {
    state.profiles.list()
}

#[tauri::command]
#[specta::specta]
pub fn set_pet_mode(app: AppHandle, on: bool) -> Result<(), String> {
    pet::set_pet_mode(&app, on).map_err(|e| e.to_string())
}

/// Whether pet mode is on (the UI asks once at start; changes come as `PetModeChanged` events).
#[tauri::command]
#[specta::specta]
pub fn pet_mode(state: State<'_, AppState>) -> bool {
    state.pet().on
}

/// The character's rectangle in the window (CSS pixels); `None` makes the whole window clickable.
#[tauri::command]
#[specta::specta]
pub fn set_hit_region(
    app: AppHandle,
    state: State<'_, AppState>,
    region: Option<HitRegion>,
) -> Result<(), String> {
    if let Some(region) = region
        && !region.is_valid()
    {
        return Err(format!("invalid hit region {region:?}"));
    }
    let (was, on) = state.update_pet(|pet| (std::mem::replace(&mut pet.hit, region), pet.on));
    // The first region in pet mode means the UI has restyled for it: clear what the opaque layout left.
    if on && was.is_none() && region.is_some() {
        pet::refresh_surface(pet::main_window(&app).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// Ends the session cleanly (its history flushed) and exits with status 0.
#[tauri::command]
#[specta::specta]
pub async fn quit(app: AppHandle) -> Result<(), String> {
    crate::quit(app).await;
    Ok(())
}
