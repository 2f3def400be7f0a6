//! Tests for `web_fetch` against a small HTTP/1.1 server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::*;

const HTML: &str = "<!doctype html><html><head><title>T</title>\
    <style>body { color: red } .secret-style {}</style>\
    <script>var secretScript = 1; alert('x');</script></head>\
    <body><h1>Hello Tomo</h1><p>A <b>small</b> page.</p><script>moreScript()</script></body></html>";

/// Serves a fixed set of routes, one request per connection (`Connection: close`).
async fn serve() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let ua_ok = head.to_ascii_lowercase().contains("user-agent: tomo/");
                let (status, ctype, body, extra): (&str, &str, Vec<u8>, &str) = match path.as_str()
                {
                    "/html" => ("200 OK", "text/html; charset=utf-8", HTML.into(), ""),
                    "/plain" => ("200 OK", "text/plain", b"just plain text\n".to_vec(), ""),
                    "/json" => (
                        "200 OK",
                        "application/json",
                        br#"{"a": [1, 2]}"#.to_vec(),
                        "",
                    ),
                    "/image" => (
                        "200 OK",
                        "image/png",
                        vec![0x89, b'P', b'N', b'G', 0, 1, 2],
                        "",
                    ),
                    "/big" => ("200 OK", "text/plain", vec![b'a'; 50_000], ""),
                    "/ua" => (
                        "200 OK",
                        "text/plain",
                        if ua_ok {
                            b"ua ok".to_vec()
                        } else {
                            b"ua missing".to_vec()
                        },
                        "",
                    ),
                    "/redirect" => (
                        "302 Found",
                        "text/plain",
                        Vec::new(),
                        "Location: /plain\r\n",
                    ),
                    "/redirect-chain" => (
                        "301 Moved Permanently",
                        "text/plain",
                        Vec::new(),
                        "Location: /redirect\r\n",
                    ),
                    "/loop" => ("302 Found", "text/plain", Vec::new(), "Location: /loop\r\n"),
                    "/to-ftp" => (
                        "302 Found",
                        "text/plain",
                        Vec::new(),
                        "Location: ftp://example.com/x\r\n",
                    ),
                    "/boom" => (
                        "503 Service Unavailable",
                        "text/plain",
                        b"down".to_vec(),
                        "",
                    ),
                    _ => ("404 Not Found", "text/plain", b"nothing here".to_vec(), ""),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.write_all(&body).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    addr
}

fn ctx() -> ToolContext {
    ToolContext {
        agent_id: "a".into(),
        data_dir: PathBuf::from("/nonexistent"),
        cancel: CancellationToken::new(),
    }
}

fn tool(config: &str) -> Arc<dyn Tool> {
    instantiate(&config.parse().unwrap(), &ToolLimits::default())
        .unwrap()
        .tools
        .remove(0)
}

fn local_tool() -> Arc<dyn Tool> {
    tool("allow_private_hosts = true")
}

async fn fetch(tool: &Arc<dyn Tool>, url: &str) -> Result<String, ToolError> {
    tool.call(json!({ "url": url }), ctx()).await
}

#[tokio::test]
async fn html_becomes_text_without_script_or_style() {
    let addr = serve().await;
    let out = fetch(&local_tool(), &format!("http://{addr}/html"))
        .await
        .unwrap();
    assert!(out.contains("Hello Tomo"), "{out}");
    // Light markdown (`# heading`, `**bold**`) is kept: models read it well.
    assert!(out.contains("# Hello Tomo"), "{out}");
    assert!(out.contains("A **small** page."), "{out}");
    for hidden in [
        "secretScript",
        "alert",
        "moreScript",
        "color: red",
        "secret-style",
        "<p>",
    ] {
        assert!(!out.contains(hidden), "`{hidden}` leaked into {out}");
    }
}

#[tokio::test]
async fn plain_text_and_json_are_returned_as_is() {
    let addr = serve().await;
    let t = local_tool();
    let out = fetch(&t, &format!("http://{addr}/plain")).await.unwrap();
    assert!(out.ends_with("just plain text"), "{out}");
    let out = fetch(&t, &format!("http://{addr}/json")).await.unwrap();
    assert!(out.contains(r#"{"a": [1, 2]}"#), "{out}");
}

#[tokio::test]
async fn image_content_type_is_a_clear_error() {
    let addr = serve().await;
    let err = fetch(&local_tool(), &format!("http://{addr}/image"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("image/png"), "{err}");
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn non_success_status_is_reported() {
    let addr = serve().await;
    let t = local_tool();
    let err = fetch(&t, &format!("http://{addr}/missing"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");
    assert!(!err.is_retryable());
    let err = fetch(&t, &format!("http://{addr}/boom")).await.unwrap_err();
    assert!(err.to_string().contains("503"), "{err}");
    assert!(err.is_retryable(), "5xx may pass: {err:?}");
}

#[tokio::test]
async fn body_beyond_max_bytes_is_truncated_and_said_so() {
    let addr = serve().await;
    let t = tool("allow_private_hosts = true\nmax_bytes = 1000");
    let out = fetch(&t, &format!("http://{addr}/big")).await.unwrap();
    assert!(out.contains(&"a".repeat(1000)), "{out}");
    assert!(!out.contains(&"a".repeat(1001)), "read past max_bytes");
    assert!(
        out.contains("[truncated: the page is larger than 1000 bytes"),
        "{out}"
    );
}

#[tokio::test]
async fn text_beyond_max_chars_is_cut() {
    let addr = serve().await;
    let t = tool("allow_private_hosts = true\nmax_chars = 10");
    let out = fetch(&t, &format!("http://{addr}/big")).await.unwrap();
    assert!(
        out.contains(&format!(
            "{}\n\n[truncated: text cut at 10 characters]",
            "a".repeat(10)
        )),
        "{out}"
    );
    assert!(!out.contains(&"a".repeat(11)), "{out}");
}

#[tokio::test]
async fn redirects_are_followed_up_to_a_limit() {
    let addr = serve().await;
    let t = local_tool();
    let out = fetch(&t, &format!("http://{addr}/redirect-chain"))
        .await
        .unwrap();
    assert!(out.contains("just plain text"), "{out}");
    assert!(
        out.contains(&format!("http://{addr}/plain")),
        "final URL is shown: {out}"
    );

    let err = fetch(&t, &format!("http://{addr}/loop")).await.unwrap_err();
    assert!(err.to_string().contains("too many redirects"), "{err}");

    let err = fetch(&t, &format!("http://{addr}/to-ftp"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refused redirect"), "{err}");
}

#[tokio::test]
async fn sends_a_user_agent() {
    let addr = serve().await;
    let out = fetch(&local_tool(), &format!("http://{addr}/ua"))
        .await
        .unwrap();
    assert!(out.contains("ua ok"), "{out}");
}

#[tokio::test]
async fn private_hosts_are_refused_by_default() {
    let addr = serve().await;
    let t = tool("");
    for url in [
        format!("http://{addr}/plain"),
        format!("http://localhost:{}/plain", addr.port()),
        "http://[::1]/".to_owned(),
        "http://192.168.1.1/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[::ffff:127.0.0.1]/".to_owned(),
    ] {
        let err = fetch(&t, &url).await.unwrap_err();
        assert!(err.to_string().contains("refused to fetch"), "{url}: {err}");
        assert!(!err.is_retryable(), "{url}");
    }
}

#[test]
fn redirect_hops_are_rechecked_against_the_host_rule() {
    // Only the first hop can be checked end to end without a public server; the loop re-runs
    // `check_host` on every hop, which this pins down.
    let fetcher = Fetcher {
        config: WebFetchConfig::default(),
        client: reqwest::Client::new(),
    };
    let next = Url::parse("http://example.com/a")
        .unwrap()
        .join("http://127.0.0.1:8080/admin")
        .unwrap();
    assert!(fetcher.check_host(&next).is_err());
    assert!(
        fetcher
            .check_host(&Url::parse("http://93.184.215.14/").unwrap())
            .is_ok()
    );
}

#[tokio::test]
async fn bad_scheme_and_bad_url_are_invalid_arguments() {
    let t = local_tool();
    for url in [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "not a url",
        "javascript:alert(1)",
    ] {
        let err = fetch(&t, url).await.unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments(_)),
            "{url}: {err:?}"
        );
    }
    let err = fetch(&t, "ftp://example.com/file").await.unwrap_err();
    assert!(
        err.to_string().contains("only http:// and https://"),
        "{err}"
    );
}

#[tokio::test]
async fn connection_errors_are_transient() {
    // Bind then drop to get a port that (almost certainly) refuses connections.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = fetch(&local_tool(), &format!("http://{addr}/"))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
}

#[test]
fn private_ranges() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.0.10",
        "169.254.1.1",
        "0.0.0.0",
        "100.64.0.1",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:10.0.0.1",
    ] {
        assert!(is_private(ip.parse().unwrap()), "{ip}");
    }
    for ip in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111"] {
        assert!(!is_private(ip.parse().unwrap()), "{ip}");
    }
}

#[test]
fn config_errors_name_the_field() {
    let err = instantiate(
        &"max_bytes = \"lots\"".parse().unwrap(),
        &ToolLimits::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { field, .. } if field == "max_bytes"),
        "{err:?}"
    );
    let err =
        instantiate(&"timeout_secs = 0".parse().unwrap(), &ToolLimits::default()).unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { field, .. } if field == "timeout_secs"),
        "{err:?}"
    );
    let err =
        instantiate(&"allow_lan = true".parse().unwrap(), &ToolLimits::default()).unwrap_err();
    assert!(
        matches!(&err, PluginError::Config { field, .. } if field == "allow_lan"),
        "{err:?}"
    );
}
