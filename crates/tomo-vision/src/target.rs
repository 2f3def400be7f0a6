//! What the watcher looks at: a window found by title, or (only when asked) a monitor.

use image::RgbaImage;
use regex::Regex;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    #[error("invalid window title pattern `{pattern}`: {message}")]
    Pattern { pattern: String, message: String },
    #[error("cannot list {what}: {message}")]
    List { what: &'static str, message: String },
    #[error("cannot capture {what}: {message}")]
    Capture { what: String, message: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowInfo {
    pub id: u32,
    pub title: String,
    pub app_name: String,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub minimized: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MonitorInfo {
    pub id: u32,
    pub name: String,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub primary: bool,
}

/// How a window is chosen: `/regex/` (case-insensitive) or else a case-insensitive substring of the title.
#[derive(Debug, Clone)]
pub enum TitlePattern {
    Substring(String),
    Regex(Regex),
}

impl TitlePattern {
    pub fn parse(pattern: &str) -> Result<Self, TargetError> {
        match pattern
            .strip_prefix('/')
            .and_then(|rest| rest.strip_suffix('/'))
        {
            Some(body) if !body.is_empty() => Regex::new(&format!("(?i){body}"))
                .map(Self::Regex)
                .map_err(|e| TargetError::Pattern {
                    pattern: pattern.to_string(),
                    message: e.to_string(),
                }),
            _ => Ok(Self::Substring(pattern.to_lowercase())),
        }
    }

    pub fn matches(&self, title: &str) -> bool {
        match self {
            Self::Substring(needle) => title.to_lowercase().contains(needle),
            Self::Regex(re) => re.is_match(title),
        }
    }
}

impl std::fmt::Display for TitlePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Substring(needle) => write!(f, "`{needle}`"),
            Self::Regex(re) => write!(f, "/{}/", re.as_str().trim_start_matches("(?i)")),
        }
    }
}

impl PartialEq for TitlePattern {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Substring(a), Self::Substring(b)) => a == b,
            (Self::Regex(a), Self::Regex(b)) => a.as_str() == b.as_str(),
            _ => false,
        }
    }
}

/// Read once per listing, and only if some window needs it.
#[cfg(target_os = "linux")]
fn legacy_title(id: u32, cache: &mut Option<std::collections::HashMap<u32, String>>) -> String {
    cache
        .get_or_insert_with(crate::x11_titles::wm_names)
        .get(&id)
        .cloned()
        .unwrap_or_default()
}

#[cfg(not(target_os = "linux"))]
fn legacy_title(_id: u32, _cache: &mut Option<std::collections::HashMap<u32, String>>) -> String {
    String::new()
}

fn list_error(what: &'static str) -> impl Fn(xcap::XCapError) -> TargetError {
    move |e| TargetError::List {
        what,
        message: e.to_string(),
    }
}

fn window_info(
    window: &xcap::Window,
    legacy_titles: &mut Option<std::collections::HashMap<u32, String>>,
) -> Result<WindowInfo, xcap::XCapError> {
    let id = window.id()?;
    let mut title = window.title().unwrap_or_default();
    if title.is_empty() {
        title = legacy_title(id, legacy_titles);
    }
    Ok(WindowInfo {
        id,
        title,
        app_name: window.app_name().unwrap_or_default(),
        x: window.x()?,
        y: window.y()?,
        width: window.width()?,
        height: window.height()?,
        minimized: window.is_minimized().unwrap_or(false),
    })
}

/// Every top-level window the display server lets us see (windows whose properties cannot be read are
/// left out: they are usually closing).
pub fn list_windows() -> Result<Vec<WindowInfo>, TargetError> {
    let windows = xcap::Window::all().map_err(list_error("windows"))?;
    let mut legacy = None;
    Ok(windows
        .iter()
        .filter_map(|w| window_info(w, &mut legacy).ok())
        .collect())
}

pub fn list_monitors() -> Result<Vec<MonitorInfo>, TargetError> {
    let monitors = xcap::Monitor::all().map_err(list_error("monitors"))?;
    let info = |m: &xcap::Monitor| -> Result<MonitorInfo, xcap::XCapError> {
        Ok(MonitorInfo {
            id: m.id()?,
            name: m.name().unwrap_or_default(),
            x: m.x()?,
            y: m.y()?,
            width: m.width()?,
            height: m.height()?,
            primary: m.is_primary().unwrap_or(false),
        })
    };
    Ok(monitors.iter().filter_map(|m| info(m).ok()).collect())
}

/// A window matching `pattern`: the first one that is not minimised, else a minimised one (so the caller
/// can say why it waits).
pub(crate) fn find_window(
    pattern: &TitlePattern,
) -> Result<Option<(xcap::Window, WindowInfo)>, TargetError> {
    let windows = xcap::Window::all().map_err(list_error("windows"))?;
    let mut minimized = None;
    let mut legacy = None;
    for window in windows {
        let Ok(info) = window_info(&window, &mut legacy) else {
            continue;
        };
        if !pattern.matches(&info.title) {
            continue;
        }
        if !info.minimized && info.width > 0 && info.height > 0 {
            return Ok(Some((window, info)));
        }
        minimized.get_or_insert((window, info));
    }
    Ok(minimized)
}

pub(crate) fn capture_window(
    window: &xcap::Window,
    info: &WindowInfo,
) -> Result<RgbaImage, TargetError> {
    window.capture_image().map_err(|e| TargetError::Capture {
        what: format!("window {} `{}`", info.id, info.title),
        message: e.to_string(),
    })
}

/// The primary monitor (or the first one) and a description for status messages.
pub(crate) fn capture_primary_monitor() -> Result<(RgbaImage, MonitorInfo), TargetError> {
    let monitors = xcap::Monitor::all().map_err(list_error("monitors"))?;
    let monitor = monitors
        .iter()
        .find(|m| m.is_primary().unwrap_or(false))
        .or_else(|| monitors.first())
        .ok_or_else(|| TargetError::List {
            what: "monitors",
            message: "none found".into(),
        })?;
    let info = MonitorInfo {
        id: monitor.id().unwrap_or(0),
        name: monitor.name().unwrap_or_default(),
        x: monitor.x().unwrap_or(0),
        y: monitor.y().unwrap_or(0),
        width: monitor.width().unwrap_or(0),
        height: monitor.height().unwrap_or(0),
        primary: monitor.is_primary().unwrap_or(false),
    };
    let image = monitor.capture_image().map_err(|e| TargetError::Capture {
        what: format!("monitor `{}`", info.name),
        message: e.to_string(),
    })?;
    Ok((image, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_patterns_ignore_case_and_regexes_need_slashes() {
        let p = TitlePattern::parse("Tomo Test").unwrap();
        assert!(p.matches("[tomo test] — notes"));
        assert!(!p.matches("tomo"));
        let r = TitlePattern::parse("/^tomo-\\d+$/").unwrap();
        assert!(r.matches("TOMO-42"));
        assert!(!r.matches("tomo-42 x"));
        assert!(matches!(
            TitlePattern::parse("/(/"),
            Err(TargetError::Pattern { .. })
        ));
        // A lone slash is a substring, not an empty regex.
        assert!(TitlePattern::parse("/").unwrap().matches("a/b"));
    }
}
