//! What a client can make `tomo serve` hold: frames, half-open connections, shutdown, served files.
//! Real sockets against a real server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tomo_server::{ConnectionLimits, SHUTDOWN_GRACE, Server, ServerConfig};

use support::Fixture;

async fn start_bare(config: ServerConfig) -> Server {
    let (ops, _ops_rx) = mpsc::channel(4);
    let (_events_tx, events) = mpsc::unbounded_channel();
    Server::start(
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..config
        },
        ops,
        events,
    )
    .await
    .unwrap()
}

/// Reads until the peer closes (or resets); `None` if it is still open after `wait`.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let mut buf = [0_u8; 4096];
    let read_all = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(wait, read_all).await.ok()?;
    Some(seen)
}

/// A half-open request (a head that never ends).
async fn half_open(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .await
        .unwrap();
    stream
}

/// A frame header claiming 15 MiB is refused when the header arrives: nothing is buffered up to the
/// library's 16 MiB frame limit first (16 such clients took the server from 54 to 301 MB).
#[tokio::test]
async fn a_frame_bigger_than_a_message_is_refused_at_its_header() {
    let fx = Fixture::start(Vec::new(), |_| {}).await;
    let ws = fx.connect("").await;
    let mut stream = match ws.into_inner() {
        tokio_tungstenite::MaybeTlsStream::Plain(stream) => stream,
        _ => unreachable!("plain ws://"),
    };
    // A masked binary frame of 15 MiB: FIN + binary, mask bit + 64-bit length, the mask.
    let mut header = vec![0x82, 0x80 | 127];
    header.extend_from_slice(&(15_u64 << 20).to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4]);
    stream.write_all(&header).await.unwrap();
    // A first MiB of payload; the rest never comes. A server that waits for the whole frame keeps the
    // connection open.
    let _ = stream.write_all(&vec![0_u8; 1 << 20]).await;
    let closed = closed_within(&mut stream, Duration::from_secs(20)).await;
    assert!(closed.is_some(), "the server waited for a 15 MiB frame");
}

/// Past the cap a new connection is closed at once; a request head that never completes is closed
/// after the header timeout; then the server answers normally again.
#[tokio::test]
async fn half_open_connections_are_capped_and_timed_out() {
    let server = start_bare(ServerConfig {
        limits: ConnectionLimits {
            max_connections: 8,
            header_timeout: Duration::from_millis(500),
        },
        ..ServerConfig::default()
    })
    .await;
    let addr = server.local_addr();
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(half_open(addr).await);
    }
    // Give the server a moment to accept the eight.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut ninth = half_open(addr).await;
    let refused = closed_within(&mut ninth, Duration::from_secs(20)).await;
    assert_eq!(refused.as_deref(), Some(&[][..]), "the ninth was served");
    for stream in &mut held {
        let closed = closed_within(stream, Duration::from_secs(20)).await;
        assert!(closed.is_some(), "a half-open connection stayed open");
    }
    let mut fresh = TcpStream::connect(addr).await.unwrap();
    fresh
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = closed_within(&mut fresh, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    server.shutdown().await.unwrap();
}

/// Shutdown does not wait for a client that never finishes its request (Ctrl-C used to hang on one).
#[tokio::test]
async fn shutdown_does_not_wait_for_a_half_open_client() {
    let server = start_bare(ServerConfig {
        limits: ConnectionLimits {
            max_connections: 8,
            // Longer than the test: only the bounded shutdown can end it.
            header_timeout: Duration::from_secs(3600),
        },
        ..ServerConfig::default()
    })
    .await;
    let _client = half_open(server.local_addr()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopped = tokio::time::timeout(SHUTDOWN_GRACE * 10, server.shutdown()).await;
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
}

/// Pages come with a policy that forbids framing (and keeps the UI's own rules); dotfiles and links
/// out of the served folders are not served.
#[tokio::test]
async fn pages_cannot_be_framed_and_only_real_files_inside_are_served() {
    let root = tempfile::tempdir().unwrap();
    let ui = root.path().join("dist");
    std::fs::create_dir_all(ui.join("assets")).unwrap();
    std::fs::write(ui.join("index.html"), "<h1>Tomo</h1>").unwrap();
    std::fs::write(ui.join("assets/app.js"), "console.log(1)").unwrap();
    std::fs::write(ui.join(".env"), "OPENAI_API_KEY=sk-x").unwrap();
    std::fs::create_dir(ui.join(".git")).unwrap();
    std::fs::write(ui.join(".git/config"), "[core]").unwrap();
    let secret = root.path().join("id_ed25519");
    std::fs::write(&secret, "PRIVATE KEY").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&secret, ui.join("key.txt")).unwrap();
        std::os::unix::fs::symlink(root.path(), ui.join("home")).unwrap();
    }
    let models = root.path().join("models");
    std::fs::create_dir(&models).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, models.join("model.json")).unwrap();
    let (ui_dir, models_dir) = (ui.clone(), models.clone());
    let fx = Fixture::start(Vec::new(), move |c| {
        c.ui_dir = Some(ui_dir);
        c.models_dir = Some(models_dir);
    })
    .await;
    let base = format!("http://{}", fx.addr());

    let index = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(index.status().as_u16(), 200);
    let headers = index.headers().clone();
    assert_eq!(headers["x-frame-options"], "DENY");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    // The Cubism 4 core compiles WebAssembly: the UI keeps working.
    assert!(
        csp.contains("script-src 'self' 'wasm-unsafe-eval'"),
        "{csp}"
    );
    assert_eq!(index.text().await.unwrap(), "<h1>Tomo</h1>");
    let app = reqwest::get(format!("{base}/assets/app.js")).await.unwrap();
    assert_eq!(app.status().as_u16(), 200);
    // Refusals carry the headers too.
    let health = reqwest::get(format!("{base}/health")).await.unwrap();
    assert_eq!(health.headers()["x-frame-options"], "DENY");

    for path in [
        "/.env",
        "/.git/config",
        "/%2egit/config",
        "/key.txt",
        "/home/id_ed25519",
        "/live2d/model.json",
    ] {
        let response = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(response.status().as_u16(), 404, "{path}");
        let body = response.text().await.unwrap();
        assert!(
            !body.contains("PRIVATE KEY") && !body.contains("sk-x"),
            "{path}: {body}"
        );
    }
}
