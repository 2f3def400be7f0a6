//! Files that hold what the user said (history, diary, mood, memory) are the user's alone: folders are
//! created 0700 and files 0600, whatever the umask, and append-only logs survive a torn last line.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// `create_dir_all` whose newly created folders are readable by the user only.
pub fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Makes an existing file or folder private (0600 / 0700). Files made by older versions were
/// world-readable; a failure (e.g. a file owned by someone else) is left to the caller to report.
pub fn restrict(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = std::fs::metadata(path)?;
        let private = if metadata.is_dir() { 0o700 } else { 0o600 };
        if metadata.permissions().mode() & 0o777 != private {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(private))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Opens `path` for appending (and reading), creating it private.
pub fn open_private_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true).read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Writes `bytes` to `path` atomically (a private temporary file renamed over it).
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp_name);
    let mut options = OpenOptions::new();
    options.create(true).write(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// Whether a non-empty file's last byte is not a newline (a crash tore its last line).
pub fn ends_without_newline(file: &mut File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// Appends `lines` (each ending in `\n`) to a JSON Lines file in one write and fsyncs it. If the file
/// ends in a torn line, a newline goes first so the new record is not glued to the broken one.
pub fn append_lines_durably(path: &Path, lines: &str) -> std::io::Result<()> {
    let mut file = open_private_append(path)?;
    let mut buffer = String::with_capacity(lines.len() + 1);
    if ends_without_newline(&mut file)? {
        buffer.push('\n');
    }
    buffer.push_str(lines);
    // One write call: with O_APPEND this is also safe against another process appending.
    file.write_all(buffer.as_bytes())?;
    file.sync_data()
}

/// The lines of a JSON Lines file's bytes, each decoded on its own: a line that is not UTF-8 (a
/// half-written multibyte character) is returned as `Err(line number)` instead of failing the file.
/// Blank lines are left out. Line numbers are 1-based.
pub fn decode_lines(bytes: &[u8]) -> impl Iterator<Item = Result<(usize, &str), usize>> {
    bytes
        .split(|byte| *byte == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(index, line)| {
            std::str::from_utf8(line)
                .map(|text| (index + 1, text))
                .map_err(|_| index + 1)
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn folders_and_files_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_private_dir_all(&dir).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let log = dir.join("log.jsonl");
        append_lines_durably(&log, "{}\n").unwrap();
        assert_eq!(mode(&log), 0o600);
        let json = dir.join("state.json");
        write_private_atomic(&json, b"{}").unwrap();
        assert_eq!(mode(&json), 0o600);
        std::fs::write(dir.join("old"), "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("old"), std::fs::Permissions::from_mode(0o644)).unwrap();
        restrict(&dir.join("old")).unwrap();
        assert_eq!(mode(&dir.join("old")), 0o600);
    }

    #[test]
    fn a_torn_line_gets_its_own_line_before_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        std::fs::write(&log, "{\"a\":1}\n{\"b\":").unwrap();
        append_lines_durably(&log, "{\"c\":3}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"a\":1}\n{\"b\":\n{\"c\":3}\n"
        );
    }

    #[test]
    fn lines_decode_one_by_one() {
        let bytes = b"first\n\ncaf\xc3\n  \nlast\xc3\xa9";
        let lines: Vec<_> = decode_lines(bytes).collect();
        assert_eq!(lines, vec![Ok((1, "first")), Err(3), Ok((5, "last\u{e9}"))]);
    }
}
