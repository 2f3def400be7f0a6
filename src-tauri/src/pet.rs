//! Pet mode: the character alone on the desktop. The window turns undecorated, always on top and off the
//! taskbar; its background is transparent (the UI drops its backdrop), and everywhere but the character
//! lets clicks through to what is below. Neither X11 nor the webview can make that decision per pixel, so
//! the UI reports the character's rectangle and a poller (~20 Hz) switches `set_ignore_cursor_events`
//! whenever the cursor enters or leaves it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, PhysicalPosition, WebviewWindow};
use tauri_specta::Event as _;

use crate::events::PetModeChanged;
use crate::state::AppState;
use crate::tray;

pub const MAIN_WINDOW: &str = "main";
const POLL: Duration = Duration::from_millis(50);

/// The character's on-screen rectangle, in CSS (logical) pixels from the window's content origin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct HitRegion {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl HitRegion {
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x && y >= self.y && x < self.x + self.width && y < self.y + self.height
    }

    /// Refuses NaN, infinite and negative sizes (a bad region would make the pet unclickable).
    pub fn is_valid(&self) -> bool {
        [self.x, self.y, self.width, self.height]
            .iter()
            .all(|v| v.is_finite())
            && self.width >= 0.0
            && self.height >= 0.0
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PetError {
    #[error("the main window is gone")]
    NoWindow,
    #[error("cannot change the window for pet mode: {0}")]
    Window(#[from] tauri::Error),
}

pub fn main_window(app: &AppHandle) -> Result<WebviewWindow, PetError> {
    app.get_webview_window(MAIN_WINDOW)
        .ok_or(PetError::NoWindow)
}

/// Turns pet mode on or off, remembers it and tells the UI and the tray.
pub fn set_pet_mode(app: &AppHandle, on: bool) -> Result<(), PetError> {
    let window = main_window(app)?;
    let state = app.state::<AppState>();
    let was_on = state.pet().on;
    if was_on && !on {
        remember_position(app, &window);
    }
    window.set_decorations(!on)?;
    window.set_always_on_top(on)?;
    window.set_skip_taskbar(on)?;
    if !on {
        window.set_ignore_cursor_events(false)?;
    } else if !was_on && let Some((x, y)) = state.pet().config.pet_position {
        window.set_position(PhysicalPosition::new(x, y))?;
    }
    let config = state.update_pet(|pet| {
        pet.on = on;
        pet.config.pet_mode = on;
        pet.config.clone()
    });
    if let Err(error) = config.save(&state.config_dir) {
        tracing::warn!(%error, "cannot remember pet mode");
    }
    if let Err(error) = (PetModeChanged { on }).emit(app) {
        tracing::warn!(%error, "cannot tell the webview about pet mode");
    }
    tray::show_pet_mode(app, on);
    Ok(())
}

/// WebKitGTK on X11 composites a transparent page *over* the window's last frame instead of replacing it,
/// so what the opaque normal layout painted stays visible after the page turns transparent. Resizing the
/// window reallocates its surface, which clears it. Called when the UI reports its first pet-mode hit
/// region, i.e. once it has restyled.
///
/// Twice: once in the CI runs the window stayed opaque for good after pet mode came from the tray right
/// after the window was shown again (a busy moment: WebKit repaints everything after a show). A nudge
/// that lands before the restyled page is painted clears nothing, and two size requests GTK takes in one
/// turn are no resize at all; the second nudge, a second later, catches both.
pub fn refresh_surface(window: WebviewWindow) {
    std::thread::spawn(move || {
        for delay in [Duration::from_millis(100), Duration::from_millis(1000)] {
            std::thread::sleep(delay);
            nudge(&window);
        }
    });
}

/// Resizes the window by one pixel and back, restoring only once the first size has taken (or after a
/// second, if the window manager keeps it).
fn nudge(window: &WebviewWindow) {
    let Ok(size) = window.inner_size() else {
        return;
    };
    let nudged = tauri::PhysicalSize::new(size.width + 1, size.height);
    if let Err(error) = window.set_size(nudged) {
        tracing::debug!(%error, "pet mode: cannot nudge the window's size");
        return;
    }
    let waited = std::time::Instant::now();
    while waited.elapsed() < Duration::from_secs(1)
        && window.inner_size().is_ok_and(|now| now != nudged)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    let restored = window.set_size(size);
    tracing::debug!(
        took_ms = waited.elapsed().as_millis() as u64,
        restored = restored.is_ok(),
        "pet mode: window surface refreshed"
    );
}

/// Keeps the pet's position for the next run (only pet mode's: the normal window is the WM's business).
pub fn remember_position(app: &AppHandle, window: &WebviewWindow) {
    let state = app.state::<AppState>();
    if !state.pet().on {
        return;
    }
    let Ok(position) = window.outer_position() else {
        return;
    };
    let config = state.update_pet(|pet| {
        pet.config.pet_position = Some((position.x, position.y));
        pet.config.clone()
    });
    if let Err(error) = config.save(&state.config_dir) {
        tracing::warn!(%error, "cannot remember the pet's position");
    }
}

/// Polls the cursor and makes the window click-through outside the hit region while in pet mode.
pub fn spawn_cursor_poll(app: AppHandle) {
    std::thread::spawn(move || {
        let mut ignoring = false;
        loop {
            std::thread::sleep(POLL);
            let state = app.state::<AppState>();
            if state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let Ok(window) = main_window(&app) else {
                return;
            };
            let pet = state.pet();
            let ignore = pet.on && !cursor_over(&window, pet.hit).unwrap_or(true);
            if ignore != ignoring {
                match window.set_ignore_cursor_events(ignore) {
                    Ok(()) => ignoring = ignore,
                    Err(error) => tracing::warn!(%error, "cannot switch click-through"),
                }
            }
        }
    });
}

/// Whether the cursor is over the character (`None`: the window cannot tell where the cursor is).
fn cursor_over(window: &WebviewWindow, hit: Option<HitRegion>) -> Option<bool> {
    let Some(hit) = hit else {
        return Some(true); // no region reported yet: keep the whole window clickable
    };
    let cursor = window.cursor_position().ok()?;
    let origin = window.inner_position().ok()?;
    let scale = window.scale_factor().ok()?;
    let x = (cursor.x - f64::from(origin.x)) / scale;
    let y = (cursor.y - f64::from(origin.y)) / scale;
    Some(hit.contains(x, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_region_contains_its_inside_only() {
        let hit = HitRegion {
            x: 10.0,
            y: 20.0,
            width: 100.0,
            height: 50.0,
        };
        assert!(hit.contains(10.0, 20.0));
        assert!(hit.contains(109.9, 69.9));
        assert!(!hit.contains(110.0, 40.0));
        assert!(!hit.contains(50.0, 19.0));
        assert!(hit.is_valid());
        assert!(
            !HitRegion {
                width: f64::NAN,
                ..hit
            }
            .is_valid()
        );
        assert!(
            !HitRegion {
                height: -1.0,
                ..hit
            }
            .is_valid()
        );
    }
}
