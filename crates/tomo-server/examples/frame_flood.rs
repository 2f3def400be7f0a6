//! Measures what oversized WebSocket frames cost the server: 16 clients each push a 15 MiB frame (the
//! scenario of issue 13), then the process's peak resident memory is printed. Not a test: a figure for
//! the report. `cargo run -p tomo-server --example frame_flood`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tomo_server::{Server, ServerConfig};

fn memory_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let (ops, _ops_rx) = mpsc::channel(4);
    let (_events_tx, events) = mpsc::unbounded_channel();
    let config = ServerConfig {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..ServerConfig::default()
    };
    let server = Server::start(config, ops, events).await.unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    println!("before: VmRSS {} kB", memory_kb("VmRSS:"));
    let mut clients = Vec::new();
    for _ in 0..16 {
        let url = url.clone();
        clients.push(tokio::spawn(async move {
            let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
            let tokio_tungstenite::MaybeTlsStream::Plain(mut stream) = ws.into_inner() else {
                return;
            };
            let len: u64 = 15 << 20;
            let mut header = vec![0x82, 0x80 | 127];
            header.extend_from_slice(&len.to_be_bytes());
            header.extend_from_slice(&[0, 0, 0, 0]);
            if stream.write_all(&header).await.is_err() {
                return;
            }
            let chunk = vec![0_u8; 64 * 1024];
            for _ in 0..(len / chunk.len() as u64) {
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }));
    }
    for client in clients {
        let _ = client.await;
    }
    println!(
        "after 16 x 15 MiB frames: VmRSS {} kB, peak VmHWM {} kB",
        memory_kb("VmRSS:"),
        memory_kb("VmHWM:")
    );
    server.shutdown().await.unwrap();
}
