//! Only the chosen window is read: what covers it is blanked before OCR.
//!
//! xcap reads a window on X11 with `GetImage`. Under a compositing manager that is the window's own content;
//! without one, the parts another window covers come back as whatever is on screen there — a chat window over
//! the game would be read as if it were the game. So when no compositor runs, every part of the frame under a
//! window stacked above the target (frames, menus and notifications included) is filled with black.

use image::{Rgba, RgbaImage};

/// A rectangle in root-window (screen) coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScreenRect {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

impl ScreenRect {
    fn right(&self) -> i64 {
        i64::from(self.x) + i64::from(self.width)
    }

    fn bottom(&self) -> i64 {
        i64::from(self.y) + i64::from(self.height)
    }
}

/// Fills the parts of `image` (the target's content, whose top-left corner is at `target.x, target.y` on the
/// screen) that `covers` overlap. Returns how many pixels were blanked.
pub fn blank_covered(image: &mut RgbaImage, target: ScreenRect, covers: &[ScreenRect]) -> u64 {
    let mut blanked = 0;
    for cover in covers {
        let left = i64::from(cover.x).max(i64::from(target.x)) - i64::from(target.x);
        let top = i64::from(cover.y).max(i64::from(target.y)) - i64::from(target.y);
        let right = cover.right().min(target.right()) - i64::from(target.x);
        let bottom = cover.bottom().min(target.bottom()) - i64::from(target.y);
        let right = right.min(i64::from(image.width()));
        let bottom = bottom.min(i64::from(image.height()));
        if left >= right || top >= bottom {
            continue;
        }
        // In range: 0 <= left < right <= width (u32), same for rows.
        for y in top as u32..bottom as u32 {
            for x in left as u32..right as u32 {
                image.put_pixel(x, y, Rgba([0, 0, 0, 255]));
            }
        }
        blanked += ((right - left) * (bottom - top)) as u64;
    }
    blanked
}

/// What covers the window `window_id` now, if its covered parts would be read wrongly: `None` when a
/// compositor runs (the capture is the window's own content) or the display cannot be asked (not X11).
#[cfg(target_os = "linux")]
pub fn covering_windows(window_id: u32) -> Option<Vec<ScreenRect>> {
    match x11::covering(window_id) {
        Ok(covers) => covers,
        Err(error) => {
            tracing::debug!(%error, "cannot tell what covers the watched window");
            None
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn covering_windows(_window_id: u32) -> Option<Vec<ScreenRect>> {
    None
}

#[cfg(target_os = "linux")]
mod x11 {
    use xcb::{Xid, x};

    use super::ScreenRect;

    type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

    /// `Ok(None)`: a compositor owns `_NET_WM_CM_S<screen>` (nothing to blank), or the window is gone.
    pub(super) fn covering(window_id: u32) -> Result<Option<Vec<ScreenRect>>> {
        let (conn, screen_num) = xcb::Connection::connect(None)?;
        let cm = conn
            .wait_for_reply(conn.send_request(&x::InternAtom {
                only_if_exists: false,
                name: format!("_NET_WM_CM_S{screen_num}").as_bytes(),
            }))?
            .atom();
        let owner =
            conn.wait_for_reply(conn.send_request(&x::GetSelectionOwner { selection: cm }))?;
        if !owner.owner().is_none() {
            return Ok(None);
        }
        // xcap's ids are those of the managed windows.
        let managed = crate::x11_titles::managed_windows(&conn)?;
        let Some(&window) = managed.iter().find(|w| w.resource_id() == window_id) else {
            return Ok(None);
        };
        let (top, root) = top_level(&conn, window)?;
        // The root's children, bottom to top: those after the target's top-level window are above it.
        let siblings = conn.wait_for_reply(conn.send_request(&x::QueryTree { window: root }))?;
        let above = siblings
            .children()
            .iter()
            .skip_while(|&&w| w != top)
            .skip(1);
        let mut covers = Vec::new();
        for &sibling in above {
            let Ok(attributes) =
                conn.wait_for_reply(conn.send_request(&x::GetWindowAttributes { window: sibling }))
            else {
                continue;
            };
            if attributes.map_state() != x::MapState::Viewable
                || attributes.class() != x::WindowClass::InputOutput
            {
                continue;
            }
            let Ok(geometry) = conn.wait_for_reply(conn.send_request(&x::GetGeometry {
                drawable: x::Drawable::Window(sibling),
            })) else {
                continue;
            };
            let border = u32::from(geometry.border_width());
            covers.push(ScreenRect {
                x: i32::from(geometry.x()),
                y: i32::from(geometry.y()),
                width: u32::from(geometry.width()) + 2 * border,
                height: u32::from(geometry.height()) + 2 * border,
            });
        }
        Ok(Some(covers))
    }

    /// The root's child that holds `window` (its window-manager frame, or itself when not reparented), and
    /// the root.
    fn top_level(conn: &xcb::Connection, window: x::Window) -> Result<(x::Window, x::Window)> {
        let mut current = window;
        loop {
            let tree = conn.wait_for_reply(conn.send_request(&x::QueryTree { window: current }))?;
            if tree.parent() == tree.root() || tree.parent().is_none() {
                return Ok((current, tree.root()));
            }
            current = tree.parent();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn rect(x: i32, y: i32, width: u32, height: u32) -> ScreenRect {
        ScreenRect {
            x,
            y,
            width,
            height,
        }
    }

    #[test]
    fn only_the_overlap_is_blanked_in_window_coordinates() {
        let mut image = RgbaImage::from_pixel(100, 50, Rgba([255, 255, 255, 255]));
        let target = rect(200, 100, 100, 50);
        let covers = [
            rect(250, 80, 100, 40),  // over the top-right corner: x 50..100, y 0..20
            rect(0, 0, 150, 150),    // beside the window: nothing
            rect(190, 140, 20, 100), // the bottom-left corner: x 0..10, y 40..50
        ];
        let blanked = blank_covered(&mut image, target, &covers);
        assert_eq!(blanked, 50 * 20 + 10 * 10);
        assert_eq!(image.get_pixel(50, 0), &Rgba([0, 0, 0, 255]));
        assert_eq!(image.get_pixel(99, 19), &Rgba([0, 0, 0, 255]));
        assert_eq!(image.get_pixel(49, 0), &Rgba([255, 255, 255, 255]));
        assert_eq!(image.get_pixel(50, 20), &Rgba([255, 255, 255, 255]));
        assert_eq!(image.get_pixel(5, 45), &Rgba([0, 0, 0, 255]));
        assert_eq!(image.get_pixel(10, 45), &Rgba([255, 255, 255, 255]));
        let black = image.pixels().filter(|p| p.0 == [0, 0, 0, 255]).count();
        assert_eq!(black as u64, blanked);
    }

    #[test]
    fn a_cover_larger_than_the_window_blanks_it_all_and_a_short_image_is_not_overrun() {
        // xcap's image can be smaller than the window's reported size (a resize in between).
        let mut image = RgbaImage::from_pixel(30, 20, Rgba([9, 9, 9, 255]));
        let blanked = blank_covered(
            &mut image,
            rect(-10, -10, 40, 30),
            &[rect(-100, -100, 500, 500)],
        );
        assert_eq!(blanked, 30 * 20);
        assert!(image.pixels().all(|p| p.0 == [0, 0, 0, 255]));
    }
}
