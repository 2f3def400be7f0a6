//! The commands the webview may call (each granted in capabilities/default.json). Typed with specta; the
//! TypeScript side is the generated `ui/src/bindings.ts`.

use tauri::{AppHandle, State};
use tomo_protocol::Op;
use tomo_server::OpRefused;
use tomo_server::profiles::ProfileInfo;

use crate::command_error::CommandError;
use crate::pet::{self, HitRegion};
use crate::replay::EventsSince;
use crate::state::AppState;

/// Sends an op to the session, checked by [`checked_op`] (`shutdown` is `quit`).
#[tauri::command]
#[specta::specta]
pub async fn send_op(state: State<'_, AppState>, op: Op) -> Result<(), CommandError> {
    let op = checked_op(&state, op)?;
    let ops = state.ops().ok_or(CommandError::NotRunning)?;
    ops.send(op).await.map_err(|_| CommandError::Ended)
}

/// What the UI and the tray may send: `tomo serve`'s client policy (no `shutdown`, profiles only from
/// the profiles directory, resolved to an absolute path there).
pub fn checked_op(state: &AppState, op: Op) -> Result<Op, OpRefused> {
    // Packaging: `switch_profile` is checked against the folder (bundled or the user's) that holds it.
    state.profiles.policy_for(&op).check(op)
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
pub fn set_pet_mode(app: AppHandle, on: bool) -> Result<(), CommandError> {
    Ok(pet::set_pet_mode(&app, on)?)
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
) -> Result<(), CommandError> {
    if let Some(region) = region
        && !region.is_valid()
    {
        return Err(CommandError::InvalidHitRegion(region));
    }
    let (was, on) = state.update_pet(|pet| (std::mem::replace(&mut pet.hit, region), pet.on));
    // The first region in pet mode means the UI has restyled for it: clear what the opaque layout left.
    if on && was.is_none() && region.is_some() {
        pet::refresh_surface(pet::main_window(&app)?);
    }
    Ok(())
}

/// Ends the session cleanly (its history flushed) and exits with status 0.
#[tauri::command]
#[specta::specta]
pub async fn quit(app: AppHandle) -> Result<(), CommandError> {
    crate::quit(app).await;
    Ok(())
}
