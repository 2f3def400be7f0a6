//! The commands the webview may call (each granted in capabilities/default.json). Typed with specta; the
//! TypeScript side is the generated `ui/src/bindings.ts`.

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, State};
use tomo_core::protocol::Op;

use crate::pet::{self, HitRegion};
use crate::replay::EventsSince;
use crate::state::AppState;

/// One switchable character, as `tomo serve`'s `/api/profiles` lists it.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct ProfileEntry {
    /// File name inside the profiles directory; what `switch_profile` takes.
    pub file: String,
    pub name: String,
    pub agent_id: String,
    pub live2d_model: Option<String>,
    /// Emotion tag → expression/motion id.
    pub emotion_map: std::collections::BTreeMap<String, String>,
}

/// Sends an op to the session. `shutdown` is refused (that is `quit`), and `switch_profile` only loads
/// from the profiles directory, like `tomo serve`.
#[tauri::command]
#[specta::specta]
pub async fn send_op(state: State<'_, AppState>, op: Op) -> Result<(), String> {
    let op = checked_op(&state, op)?;
    let ops = state.ops().ok_or("the session is not running (yet)")?;
    ops.send(op)
        .await
        .map_err(|_| "the session has ended".to_owned())
}

/// What the UI and the tray may send: no `shutdown`, profiles only from the profiles directory (resolved
/// to an absolute path there).
pub fn checked_op(state: &AppState, op: Op) -> Result<Op, String> {
    match op {
        Op::Shutdown => Err("shutdown is not an op the UI may send; use quit".into()),
        Op::SwitchProfile { path } => {
            let resolved = tomo_server::profiles::resolve(Some(&state.profiles_dir), &path)
                .map_err(|e| e.to_string())?;
            Ok(Op::SwitchProfile {
                path: resolved.display().to_string(),
            })
        }
        op => Ok(op),
    }
}

/// Every kept session event after `last_seq` (0: from the start): what a reloaded webview missed.
#[tauri::command]
#[specta::specta]
pub fn events_since(state: State<'_, AppState>, last_seq: u64) -> EventsSince {
    state.replay.since(last_seq)
}

#[tauri::command]
#[specta::specta]
pub fn list_profiles(state: State<'_, AppState>) -> Vec<ProfileEntry> {
    tomo_server::profiles::list(&state.profiles_dir)
        .into_iter()
        .map(|p| ProfileEntry {
            file: p.file,
            name: p.name,
            agent_id: p.agent_id,
            live2d_model: p.live2d_model,
            emotion_map: p.emotion_map,
        })
        .collect()
}

#[tauri::command]
#[specta::specta]
pub fn set_pet_mode(app: AppHandle, on: bool) -> Result<(), String> {
    pet::set_pet_mode(&app, on).map_err(|e| e.to_string())
}

/// The character's rectangle in the window (CSS pixels); `None` makes the whole window clickable.
#[tauri::command]
#[specta::specta]
pub fn set_hit_region(state: State<'_, AppState>, region: Option<HitRegion>) -> Result<(), String> {
    if let Some(region) = region
        && !region.is_valid()
    {
        return Err(format!("invalid hit region {region:?}"));
    }
    state.update_pet(|pet| pet.hit = region);
    Ok(())
}

/// Ends the session cleanly (its history flushed) and exits with status 0.
#[tauri::command]
#[specta::specta]
pub async fn quit(app: AppHandle) -> Result<(), String> {
    crate::quit(app).await;
    Ok(())
}
