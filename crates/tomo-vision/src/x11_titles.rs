//! Legacy X11 window titles. xcap 0.9 reads `_NET_WM_NAME` (UTF-8) and then `WM_NAME` only as
//! COMPOUND_TEXT, so a window whose `WM_NAME` is a plain STRING (Xt, Motif, xterm, ImageMagick `display`)
//! has an empty title there. This reads `WM_NAME` of every managed window, whatever its type. It also lists
//! the managed windows for [`crate::occlusion`].

use std::collections::HashMap;

use xcb::{Xid, x};

/// Window id → `WM_NAME`, for windows in `_NET_CLIENT_LIST_STACKING`. Empty when X is unreachable.
pub(crate) fn wm_names() -> HashMap<u32, String> {
    match read() {
        Ok(names) => names,
        Err(error) => {
            tracing::debug!(%error, "cannot read legacy X11 window titles");
            HashMap::new()
        }
    }
}

fn read() -> Result<HashMap<u32, String>, Box<dyn std::error::Error>> {
    let (conn, _) = xcb::Connection::connect(None)?;
    let mut names = HashMap::new();
    for window in managed_windows(&conn)? {
        let reply = conn.wait_for_reply(conn.send_request(&x::GetProperty {
            delete: false,
            window,
            property: x::ATOM_WM_NAME,
            r#type: x::ATOM_ANY,
            long_offset: 0,
            long_length: 1024,
        }));
        if let Ok(reply) = reply
            && reply.format() == 8
        {
            let name = String::from_utf8_lossy(reply.value::<u8>()).into_owned();
            if !name.is_empty() {
                names.insert(window.resource_id(), name);
            }
        }
    }
    Ok(names)
}

/// The windows the window manager manages (`_NET_CLIENT_LIST_STACKING` of every screen, bottom to top): the
/// ones xcap lists, by the same ids.
pub(crate) fn managed_windows(
    conn: &xcb::Connection,
) -> Result<Vec<x::Window>, Box<dyn std::error::Error>> {
    let atom = conn.wait_for_reply(conn.send_request(&x::InternAtom {
        only_if_exists: true,
        name: b"_NET_CLIENT_LIST_STACKING",
    }))?;
    let mut windows = Vec::new();
    for screen in conn.get_setup().roots() {
        let list = conn.wait_for_reply(conn.send_request(&x::GetProperty {
            delete: false,
            window: screen.root(),
            property: atom.atom(),
            r#type: x::ATOM_WINDOW,
            long_offset: 0,
            long_length: 4096,
        }))?;
        if list.format() == 32 {
            windows.extend_from_slice(list.value::<x::Window>());
        }
    }
    Ok(windows)
}
