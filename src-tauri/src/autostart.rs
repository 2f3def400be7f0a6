//! "Start with my desktop": an XDG autostart entry (`~/.config/autostart/Tomo.desktop`) that the desktop
//! session runs at login. Off until the user turns it on; the file's presence is the setting, so removing it
//! by hand turns it off too.

use std::path::{Path, PathBuf};

/// The entry's file name (the same as the installed launcher entry's).
pub const FILE_NAME: &str = "Tomo.desktop";

#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("cannot find your config folder ($XDG_CONFIG_HOME or ~/.config)")]
    NoConfigDir,
    #[error("cannot find the running program's path: {0}")]
    NoExe(#[source] std::io::Error),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `$XDG_CONFIG_HOME/autostart/Tomo.desktop`.
pub fn entry_path() -> Result<PathBuf, AutostartError> {
    Ok(dirs::config_dir()
        .ok_or(AutostartError::NoConfigDir)?
        .join("autostart")
        .join(FILE_NAME))
}

/// Whether the desktop starts Tomo at login (an entry that is there and not hidden or disabled).
pub fn is_enabled(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    !text.lines().any(|line| {
        let line = line.trim();
        line == "Hidden=true" || line == "X-GNOME-Autostart-enabled=false"
    })
}

/// Turns it on (writing the entry for `exe`) or off (removing it).
pub fn set(path: &Path, exe: &Path, on: bool) -> Result<(), AutostartError> {
    if !on {
        return match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(AutostartError::Remove {
                path: path.to_path_buf(),
                source,
            }),
        };
    }
    let write = |source| AutostartError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write)?;
    }
    std::fs::write(path, entry(exe)).map_err(write)
}

/// Turns it on or off for the running program.
pub fn set_for_this_app(on: bool) -> Result<(), AutostartError> {
    let exe = std::env::current_exe().map_err(AutostartError::NoExe)?;
    set(&entry_path()?, &exe, on)
}

pub fn enabled_for_this_app() -> bool {
    entry_path().is_ok_and(|path| is_enabled(&path))
}

fn entry(exe: &Path) -> String {
    format!(
        "[Desktop Entry]\nType=Application\nName=Tomo\nComment=Your desktop companion\nExec={}\n\
         Icon=tomo-desktop\nTerminal=false\nX-GNOME-Autostart-enabled=true\n",
        exec_quote(&exe.display().to_string())
    )
}

/// The desktop entry spec's quoting for an `Exec` argument: plain when it has nothing special, else in
/// double quotes with `"`, `` ` ``, `$` and `\` escaped (and `%` doubled: it starts field codes).
fn exec_quote(arg: &str) -> String {
    let arg = arg.replace('%', "%%");
    let plain = arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-_.+,:=@".contains(c));
    if plain {
        return arg;
    }
    let mut quoted = String::from("\"");
    for c in arg.chars() {
        if matches!(c, '"' | '`' | '$' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

#[tauri::command]
#[specta::specta]
pub fn autostart_enabled() -> bool {
    enabled_for_this_app()
}

#[tauri::command]
#[specta::specta]
pub fn set_autostart(
    app: tauri::AppHandle,
    on: bool,
) -> Result<(), crate::command_error::CommandError> {
    set_for_this_app(on)?;
    crate::tray::show_autostart(&app, on);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn on_writes_an_entry_that_runs_this_program_and_off_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("autostart").join(FILE_NAME);
        assert!(!is_enabled(&path), "off by default");
        set(&path, Path::new("/usr/bin/tomo-desktop"), true).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
        assert!(text.contains("\nExec=/usr/bin/tomo-desktop\n"), "{text}");
        assert!(is_enabled(&path));
        set(&path, Path::new("/usr/bin/tomo-desktop"), false).unwrap();
        assert!(!path.exists());
        set(&path, Path::new("/usr/bin/tomo-desktop"), false).unwrap(); // already off: fine
    }

    #[test]
    fn a_hidden_entry_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "[Desktop Entry]\nExec=tomo-desktop\nHidden=true\n").unwrap();
        assert!(!is_enabled(&path));
    }

    #[test]
    fn exec_paths_are_quoted_as_the_spec_says() {
        assert_eq!(exec_quote("/usr/bin/tomo-desktop"), "/usr/bin/tomo-desktop");
        assert_eq!(
            exec_quote("/home/me/My Apps/tomo"),
            "\"/home/me/My Apps/tomo\""
        );
        assert_eq!(exec_quote("/a/$b\"c"), "\"/a/\\$b\\\"c\"");
        assert_eq!(exec_quote("/a/100%"), "\"/a/100%%\"");
    }
}
