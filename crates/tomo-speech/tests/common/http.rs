//! A tiny HTTP/1.1 server on 127.0.0.1 for download tests: serves one body, honours `Range`, can cut the
//! first response short, records the requests it saw.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub struct Server {
    pub base: String,
    pub requests: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone)]
pub struct Behaviour {
    /// Served at `/file`; other paths are 404.
    pub body: Arc<Vec<u8>>,
    /// Close the connection after this many body bytes on the first request (simulated cut).
    pub cut_first_after: Option<usize>,
}

pub fn serve(behaviour: Behaviour) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let head = handle(stream, &behaviour, n == 0);
            seen.lock().unwrap().push(head);
        }
    });
    Server { base, requests }
}

/// Reads a request (head and any body) and answers it; returns the request head.
pub fn read_request(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length = header(&head, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (head, body)
}

pub fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn handle(mut stream: TcpStream, behaviour: &Behaviour, first: bool) -> String {
    let (head, _) = read_request(&mut stream);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    if path != "/file" {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return head;
    }
    let body = &behaviour.body;
    let start = header(&head, "range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok());
    let (status, from) = match start {
        Some(from) => (
            format!(
                "206 Partial Content\r\nContent-Range: bytes {from}-{}/{}",
                body.len() - 1,
                body.len()
            ),
            from,
        ),
        None => ("200 OK".to_string(), 0),
    };
    let rest = &body[from..];
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        rest.len()
    );
    let _ = stream.write_all(response.as_bytes());
    let send = match behaviour.cut_first_after {
        Some(cut) if first => &rest[..cut.min(rest.len())],
        _ => rest,
    };
    let _ = stream.write_all(send);
    let _ = stream.flush();
    head
}
