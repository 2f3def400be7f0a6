//! Package tarballs from the npm registry. The registry serves every published version at a fixed address,
//! `<registry>/<name>/-/<file>` (`<registry>/@scope/name/-/name-1.0.0.tgz` for scoped packages), so no
//! metadata document is needed; the manifest pins the tarball's sha256 because npm publishes only sha1 and
//! sha512 digests.

use crate::ModelError;
use crate::manifest::PackageSource;
use crate::pypi::ResolvedFile;

/// The default registry; `TOMO_NPM_URL` overrides it (a mirror, or a local server in tests).
pub const DEFAULT_NPM: &str = "https://registry.npmjs.org";

pub fn registry_url() -> String {
    std::env::var("TOMO_NPM_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| DEFAULT_NPM.to_string())
}

/// The tarball's address and the sha256 it must have. No request is made: npm's tarball addresses are
/// fixed, and a wrong name or version shows up as a 404 from the download.
pub fn resolve(registry: &str, source: &PackageSource) -> Result<ResolvedFile, ModelError> {
    let fail = |message: String| ModelError::Package {
        package: source.key(),
        message,
    };
    let sha256 = source
        .sha256
        .clone()
        .ok_or_else(|| fail("no sha256 pinned in the manifest".into()))?;
    let segments: Vec<&str> = source.name.split('/').collect();
    let valid_name = match segments.as_slice() {
        [name] => valid_segment(name),
        [scope, name] => {
            scope.starts_with('@') && valid_segment(&scope[1..]) && valid_segment(name)
        }
        _ => false,
    };
    if !valid_name {
        return Err(fail(format!(
            "`{}` is not an npm package name",
            source.name
        )));
    }
    if source.file.contains(['/', '*']) || !source.file.ends_with(".tgz") {
        return Err(fail(format!("`{}` is not a tarball name", source.file)));
    }
    Ok(ResolvedFile {
        url: format!(
            "{}/{}/-/{}",
            registry.trim_end_matches('/'),
            source.name,
            source.file
        ),
        filename: source.file.clone(),
        sha256,
        size: None,
    })
}

/// npm's rule for a name (or scope) part: URL-safe characters, not starting with `.` or `_`.
fn valid_segment(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with(['.', '_'])
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Registry;

    fn source(name: &str, file: &str) -> PackageSource {
        PackageSource {
            name: name.into(),
            version: "1.2.1".into(),
            file: file.into(),
            registry: Registry::Npm,
            sha256: Some("ab".repeat(32)),
        }
    }

    #[test]
    fn tarball_addresses_follow_the_registry_layout() {
        let plain = resolve(
            "https://registry.npmjs.org/",
            &source("kokoro-js", "kokoro-js-1.2.1.tgz"),
        )
        .unwrap();
        assert_eq!(
            plain.url,
            "https://registry.npmjs.org/kokoro-js/-/kokoro-js-1.2.1.tgz"
        );
        assert_eq!(plain.sha256, "ab".repeat(32));
        let scoped = resolve("http://127.0.0.1:9", &source("@a/b", "b-1.2.1.tgz")).unwrap();
        assert_eq!(scoped.url, "http://127.0.0.1:9/@a/b/-/b-1.2.1.tgz");
    }

    #[test]
    fn bad_names_are_refused_with_the_package_named() {
        let error = resolve("http://x", &source("../etc", "x.tgz")).unwrap_err();
        assert!(error.to_string().contains("../etc@1.2.1 (npm)"), "{error}");
        let error = resolve("http://x", &source("a", "a/../b.tgz")).unwrap_err();
        assert!(error.to_string().contains("tarball"), "{error}");
    }
}
