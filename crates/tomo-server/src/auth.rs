//! Who may talk to the server: the token, loopback `Host` names, WebSocket origins.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::AppState;

/// Runs before every route. On a loopback bind the `Host` must be a loopback name, so a web page whose
/// domain resolves to 127.0.0.1 (DNS rebinding) cannot reach the session from the user's browser. With a
/// token (`tomo serve` always has one: loopback is not a trust boundary, any local process or web page can
/// connect), the request must carry it: `Authorization: Bearer`, `?token=`, or the cookie a browser got
/// when it opened the address `tomo serve` printed (`/?token=…`), which is what lets the page's own
/// assets and WebSocket through without the token in every URL.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if state.loopback {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        if !host.is_some_and(is_loopback_authority) {
            tracing::warn!(?host, "refused request with a non-loopback Host header");
            return (
                StatusCode::FORBIDDEN,
                "this server only answers requests for localhost\n",
            )
                .into_response();
        }
    }
    let Some(token) = &state.token else {
        return next.run(request).await;
    };
    let valid = |presented: &str| same_secret(presented.as_bytes(), token.as_bytes());
    let from_query = query_param(request.uri().query().unwrap_or(""), "token");
    let authorized = bearer(request.headers()).is_some_and(|p| valid(&p))
        || from_query.as_deref().is_some_and(valid)
        || cookie(request.headers(), &state.cookie_name).is_some_and(|p| valid(&p));
    if !authorized {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong token: open the address `tomo serve` printed (it carries the token), or send \
             Authorization: Bearer <token>\n",
        )
            .into_response();
    }
    let remember = from_query.as_deref().is_some_and(valid);
    let mut response = next.run(request).await;
    if remember
        && let Ok(value) = header::HeaderValue::from_str(&format!(
            "{}={token}; HttpOnly; SameSite=Strict; Path=/",
            state.cookie_name
        ))
    {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Browsers send `Origin` on WebSocket upgrades; other clients usually do not (they need the token
/// anyway). A browser page may connect only from the server's own origin, or from an origin the user
/// allowed (`--allow-origin`, for UI development).
pub(crate) fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| host.eq_ignore_ascii_case(authority))
}

/// The value of cookie `name`, if the request carries it.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then(|| value.to_owned())
        })
}

/// A fresh access token: 32 random bytes, hex.
pub fn generate_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `localhost`, `127.0.0.1`, `[::1]`, with or without a port.
fn is_loopback_authority(authority: &str) -> bool {
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// The first value of `name` in a query string, percent-decoded.
pub(crate) fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| percent_decode(value))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = if bytes[i] == b'%' && i + 2 < bytes.len() {
            std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        } else {
            None
        };
        match (decoded, bytes[i]) {
            (Some(byte), _) => {
                out.push(byte);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, byte) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Compares digests in constant time, so neither the content nor the length of the token leaks through
/// how long a refusal takes.
fn same_secret(presented: &[u8], expected: &[u8]) -> bool {
    let a = Sha256::digest(presented);
    let b = Sha256::digest(expected);
    a.as_slice().ct_eq(b.as_slice()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn loopback_names() {
        for ok in [
            "localhost",
            "localhost:7860",
            "127.0.0.1:1",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in [
            "evil.com:7860",
            "10.0.0.2:7860",
            "localhost.evil.com",
            "[::2]:1",
        ] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let mut headers = HeaderMap::new();
        assert!(origin_allowed(&headers, &[]), "no Origin: not a browser");
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:7860"));
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:7860"),
        );
        assert!(origin_allowed(&headers, &[]));
        // Any other local page: another port is another origin.
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://localhost:5173"),
        );
        assert!(!origin_allowed(&headers, &[]));
        assert!(origin_allowed(
            &headers,
            &["http://localhost:5173/".to_owned()]
        ));
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        assert!(!origin_allowed(&headers, &[]));
        headers.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!origin_allowed(&headers, &[]));
    }

    #[test]
    fn cookies_and_tokens() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; tomo_token_7860=abc; b=2"),
        );
        assert_eq!(cookie(&headers, "tomo_token_7860").as_deref(), Some("abc"));
        assert_eq!(cookie(&headers, "tomo_token_7861"), None);
        let one = generate_token().unwrap();
        assert_eq!(one.len(), 64);
        assert_ne!(one, generate_token().unwrap());
    }

    #[test]
    fn query_parsing() {
        assert_eq!(
            query_param("a=1&token=x%2By+z", "token").as_deref(),
            Some("x+y z")
        );
        assert_eq!(query_param("last_seq=5", "last_seq").as_deref(), Some("5"));
        assert_eq!(query_param("bad=%4", "bad").as_deref(), Some("%4"));
        assert_eq!(query_param("x=1", "token"), None);
    }

    #[test]
    fn secrets() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"ab", b"abc"));
    }
}
