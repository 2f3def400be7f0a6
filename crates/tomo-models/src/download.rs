//! HTTP downloads that survive cut connections: resume into `<dest>.part` with `Range`, retry transient
//! failures, verify sha256, then rename into place. Blocking: call it from a plain thread or
//! `spawn_blocking`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Client;
use reqwest::header::{CONTENT_RANGE, RANGE};

use crate::store::{hex, sha256_file};

#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("{url}: not found (HTTP 404)")]
    NotFound { url: String },
    #[error("{url}: HTTP {status}")]
    Http { url: String, status: u16 },
    #[error("{url}: {message} (gave up after {attempts} attempts)")]
    Network {
        url: String,
        message: String,
        attempts: u32,
    },
    #[error("{url}: downloaded file has sha256 {actual}, expected {expected}")]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the finished file must be.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    pub sha256: Option<String>,
    pub size: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Downloader {
    client: Client,
    /// Attempts per file, counting the first.
    pub attempts: u32,
    /// Waits between attempts grow from this (1×, 2×, 4×, ...).
    pub retry_delay: Duration,
}

impl Downloader {
    pub fn new() -> Result<Self, DownloadError> {
        let client = Client::builder()
            .connect_timeout(Duration::from_secs(30))
            // No total timeout: big files on slow links are fine. TCP keepalive catches dead peers.
            .timeout(None::<Duration>)
            .tcp_keepalive(Duration::from_secs(30))
            .user_agent(concat!("tomo/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| DownloadError::Network {
                url: String::new(),
                message: format!("cannot build the HTTP client: {error}"),
                attempts: 0,
            })?;
        Ok(Self {
            client,
            attempts: 5,
            retry_delay: Duration::from_secs(1),
        })
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Downloads `url` to `dest`. `progress(done, total)` is called as bytes arrive (total when known).
    pub fn download(
        &self,
        url: &str,
        dest: &Path,
        expected: &Expected,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<(), DownloadError> {
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|source| io(parent, source))?;
        }
        let part = part_path(dest);
        let mut last_error = String::new();
        let mut attempt = 0;
        while attempt < self.attempts.max(1) {
            if attempt > 0 {
                let wait = self.retry_delay * 2u32.saturating_pow(attempt - 1);
                tracing::info!(url, attempt, error = %last_error, "retrying download in {wait:?}");
                std::thread::sleep(wait);
            }
            attempt += 1;
            match self.try_once(url, &part, expected, progress) {
                Ok(()) => return finish(url, &part, dest, expected),
                Err(Attempt::Fatal(error)) => return Err(error),
                Err(Attempt::Transient(message)) => last_error = message,
            }
        }
        Err(DownloadError::Network {
            url: url.to_string(),
            message: last_error,
            attempts: attempt,
        })
    }

    fn try_once(
        &self,
        url: &str,
        part: &Path,
        expected: &Expected,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<(), Attempt> {
        let have = fs::metadata(part).map(|m| m.len()).unwrap_or(0);
        if have > 0 && expected.size == Some(have) {
            return Ok(()); // a previous run got every byte; `finish` checks the hash
        }
        let mut request = self.client.get(url);
        if have > 0 {
            request = request.header(RANGE, format!("bytes={have}-"));
        }
        let mut response = request
            .send()
            .map_err(|e| Attempt::Transient(e.to_string()))?;
        let status = response.status();
        let (mut file, mut done) = match status {
            StatusCode::PARTIAL_CONTENT if have > 0 && range_start(&response) == Some(have) => {
                let file = OpenOptions::new()
                    .append(true)
                    .open(part)
                    .map_err(|e| fatal_io(part, e))?;
                (file, have)
            }
            StatusCode::PARTIAL_CONTENT => {
                let _ = fs::remove_file(part);
                return Err(Attempt::Transient(
                    "server answered another byte range than asked".into(),
                ));
            }
            StatusCode::RANGE_NOT_SATISFIABLE if have > 0 => {
                // Our part is already complete (or longer than the file): start over if the hash disagrees.
                return Ok(());
            }
            status if status.is_success() => {
                (File::create(part).map_err(|e| fatal_io(part, e))?, 0)
            }
            StatusCode::NOT_FOUND => {
                return Err(Attempt::Fatal(DownloadError::NotFound {
                    url: url.to_string(),
                }));
            }
            status if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS => {
                return Err(Attempt::Transient(format!("HTTP {}", status.as_u16())));
            }
            status => {
                return Err(Attempt::Fatal(DownloadError::Http {
                    url: url.to_string(),
                    status: status.as_u16(),
                }));
            }
        };
        let total = response
            .content_length()
            .map(|len| len + done)
            .or(expected.size);
        progress(done, total);
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let n = response
                .read(&mut buffer)
                .map_err(|e| Attempt::Transient(e.to_string()))?;
            if n == 0 {
                break;
            }
            file.write_all(&buffer[..n])
                .map_err(|e| fatal_io(part, e))?;
            done += n as u64;
            progress(done, total);
        }
        file.flush().map_err(|e| fatal_io(part, e))?;
        if let Some(total) = total
            && done < total
        {
            return Err(Attempt::Transient(format!(
                "connection closed after {done} of {total} bytes"
            )));
        }
        Ok(())
    }
}

enum Attempt {
    Transient(String),
    Fatal(DownloadError),
}

fn finish(url: &str, part: &Path, dest: &Path, expected: &Expected) -> Result<(), DownloadError> {
    if let Some(want) = &expected.sha256 {
        let actual = sha256_file(part).map_err(|error| DownloadError::Io {
            path: part.to_path_buf(),
            source: std::io::Error::other(error.to_string()),
        })?;
        if &actual != want {
            // A wrong file is not worth resuming: the next attempt starts clean.
            let _ = fs::remove_file(part);
            return Err(DownloadError::Checksum {
                url: url.to_string(),
                expected: want.clone(),
                actual,
            });
        }
    }
    fs::rename(part, dest).map_err(|source| io(dest, source))
}

/// `bytes 100-199/200` → 100. A server that answers another range than asked is not trusted.
fn range_start(response: &reqwest::blocking::Response) -> Option<u64> {
    let value = response.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    value
        .strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.as_os_str().to_os_string();
    name.push(".part");
    PathBuf::from(name)
}

fn io(path: &Path, source: std::io::Error) -> DownloadError {
    DownloadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn fatal_io(path: &Path, source: std::io::Error) -> Attempt {
    Attempt::Fatal(io(path, source))
}

/// sha256 of bytes, lowercase hex (tests and small files).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}
