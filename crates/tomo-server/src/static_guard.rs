//! What the static folders may hand out, and how pages are framed. `ServeDir` refuses `..`, but it
//! follows symlinks and serves dotfiles: a link in the UI or models folder pointing at `~/.ssh`, or a
//! stray `.env`, would be one request away. Every page also carries a Content-Security-Policy (the
//! same as the UI's own `<meta>`, plus `frame-ancestors 'none'`) and `X-Frame-Options: DENY`, so no
//! other site can frame the session's UI and click through it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The UI's `<meta>` policy (ui/index.html; 'wasm-unsafe-eval' for the Cubism 4 core), plus
/// `frame-ancestors`, which only a header can set.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self' ws://127.0.0.1:* ws://localhost:* \
     http://127.0.0.1:* http://localhost:*; font-src 'self'; base-uri 'none'; form-action 'none'; \
     object-src 'none'; frame-ancestors 'none'";

/// Adds the framing and content-type headers to every response.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The folders one static route serves from, in the order `ServeDir` tries them.
#[derive(Debug, Clone)]
pub(crate) struct StaticRoots(pub Arc<Vec<PathBuf>>);

/// 404 for a path with a dot-segment (`.env`, `.git/…`) and for one that leads out of the folder it
/// would be served from (through a symlink); everything else goes on to `ServeDir`.
pub(crate) async fn guard(
    State(roots): State<StaticRoots>,
    request: Request,
    next: Next,
) -> Response {
    let Some(relative) = percent_decode(request.uri().path()) else {
        return not_found();
    };
    let relative = relative.trim_start_matches('/').to_owned();
    let roots = Arc::clone(&roots.0);
    let allowed = tokio::task::spawn_blocking(move || allowed(&roots, &relative))
        .await
        .unwrap_or(false);
    if !allowed {
        tracing::debug!(path = %request.uri().path(), "refused a static path");
        return not_found();
    }
    next.run(request).await
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

/// Whether `relative` may be served from `roots`: no segment starts with a dot, and the first root
/// that has it holds it for real (its canonical path stays inside the canonical root).
fn allowed(roots: &[PathBuf], relative: &str) -> bool {
    if relative
        .split(['/', '\\'])
        .any(|segment| segment.starts_with('.'))
    {
        return false;
    }
    for root in roots {
        let candidate = root.join(relative);
        if std::fs::symlink_metadata(&candidate).is_err() {
            continue;
        }
        let Ok(root) = root.canonicalize() else {
            return false;
        };
        // A directory is served as its index.html: that file must stay inside too.
        let index = candidate.join("index.html");
        return inside(&root, &candidate) && (!index.exists() || inside(&root, &index));
    }
    // Nothing there: ServeDir answers 404 itself.
    true
}

fn inside(root: &Path, path: &Path) -> bool {
    path.canonicalize().is_ok_and(|real| real.starts_with(root))
}

/// `%xx` decoded, as `ServeDir` decodes it; `None` for invalid escapes or UTF-8.
fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = path.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn dotfiles_and_links_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ui");
        std::fs::create_dir_all(root.join("assets")).unwrap();
        std::fs::write(root.join("assets/app.js"), "x").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        let roots = vec![root.clone()];
        assert!(allowed(&roots, "assets/app.js"));
        assert!(allowed(&roots, "missing.js"));
        assert!(!allowed(&roots, ".env"));
        assert!(!allowed(&roots, "assets/.git/config"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
            std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
            std::os::unix::fs::symlink(root.join("assets/app.js"), root.join("inner")).unwrap();
            assert!(!allowed(&roots, "link"));
            assert!(!allowed(&roots, "up/secret"));
            assert!(allowed(&roots, "inner"), "a link that stays inside is fine");
        }
        assert_eq!(percent_decode("/%2e%2e/a").as_deref(), Some("/../a"));
        assert_eq!(percent_decode("/%zz"), None);
    }
}
