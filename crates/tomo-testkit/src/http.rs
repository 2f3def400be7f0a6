//! Minimal hand-rolled HTTP/1.1: just enough to read one request and write the response shapes the
//! scripted server needs. Generic over the I/O traits so the parser is unit-tested on byte slices.

use std::io;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Headers beyond this are a broken or hostile client, not a chat request.
const MAX_HEAD: usize = 64 * 1024;
/// Generous: long conversations with tool results can be megabytes, but never this.
const MAX_BODY: usize = 64 * 1024 * 1024;

#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer closed before sending anything (e.g. a connection-pool probe).
    Closed,
    Malformed(&'static str),
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Buffered reader that keeps whatever was read past the point the parser has consumed.
struct Input<'a, R> {
    reader: &'a mut R,
    buf: Vec<u8>,
    pos: usize,
}

impl<R: AsyncRead + Unpin> Input<'_, R> {
    /// Reads more bytes; `Ok(false)` on EOF.
    async fn fill(&mut self) -> Result<bool, ReadError> {
        let mut tmp = [0u8; 8192];
        let n = self.reader.read(&mut tmp).await?;
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(n > 0)
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Consumes up to and including the next `delim`, returning what came before it.
    async fn take_until(&mut self, delim: &[u8], limit: usize) -> Result<Vec<u8>, ReadError> {
        loop {
            if let Some(i) = find(self.pending(), delim) {
                let out = self.pending()[..i].to_vec();
                self.pos += i + delim.len();
                return Ok(out);
            }
            if self.pending().len() > limit {
                return Err(ReadError::Malformed("line too long"));
            }
            if !self.fill().await? {
                return Err(if self.buf.is_empty() {
                    ReadError::Closed
                } else {
                    ReadError::Malformed("connection closed mid-request")
                });
            }
        }
    }

    async fn take_exact(&mut self, n: usize) -> Result<Vec<u8>, ReadError> {
        while self.pending().len() < n {
            if !self.fill().await? {
                return Err(ReadError::Malformed("connection closed mid-body"));
            }
        }
        let out = self.pending()[..n].to_vec();
        self.pos += n;
        Ok(out)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one request: request line, headers, and a `Content-Length` or chunked body.
pub(crate) async fn read_request<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Request, ReadError> {
    let mut input = Input {
        reader,
        buf: Vec::with_capacity(8192),
        pos: 0,
    };
    let head = input.take_until(b"\r\n\r\n", MAX_HEAD).await?;
    let head = std::str::from_utf8(&head).map_err(|_| ReadError::Malformed("non-UTF-8 head"))?;
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed("bad request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed("not HTTP/1.x"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or(ReadError::Malformed("bad header line"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut request = Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body: Vec::new(),
    };
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    request.body = if chunked {
        read_chunked_body(&mut input).await?
    } else if let Some(len) = request.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| ReadError::Malformed("bad content-length"))?;
        if len > MAX_BODY {
            return Err(ReadError::Malformed("body too large"));
        }
        input.take_exact(len).await?
    } else {
        Vec::new()
    };
    Ok(request)
}

async fn read_chunked_body<R: AsyncRead + Unpin>(
    input: &mut Input<'_, R>,
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let size_line = input.take_until(b"\r\n", 1024).await?;
        let size_line =
            std::str::from_utf8(&size_line).map_err(|_| ReadError::Malformed("bad chunk size"))?;
        // Chunk extensions (`;name=value`) are legal and meaningless here.
        let size_hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| ReadError::Malformed("bad chunk size"))?;
        if size == 0 {
            // Skip trailers up to the empty line that ends the message.
            while !input.take_until(b"\r\n", MAX_HEAD).await?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::Malformed("body too large"));
        }
        body.extend(input.take_exact(size).await?);
        if !input.take_exact(2).await?.eq(b"\r\n") {
            return Err(ReadError::Malformed("chunk not followed by CRLF"));
        }
    }
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// OpenAI's `error.type` / `error.code` for common statuses, so clients that branch on them
/// (retry on rate limits, re-auth on bad keys) see what the real service sends.
fn error_kind(code: u16) -> (&'static str, Option<&'static str>) {
    match code {
        400 | 413 | 422 => ("invalid_request_error", None),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => ("permission_error", None),
        404 => ("invalid_request_error", Some("not_found")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    }
}

pub(crate) fn error_body(code: u16, message: &str) -> Value {
    let (kind, error_code) = error_kind(code);
    json!({ "error": { "message": message, "type": kind, "param": null, "code": error_code } })
}

/// A complete non-streaming JSON response.
pub(crate) async fn write_json<W: AsyncWrite + Unpin>(
    w: &mut W,
    code: u16,
    body: &Value,
) -> io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason_phrase(code),
        body.len()
    );
    w.write_all(format!("{head}{body}").as_bytes()).await?;
    w.flush().await
}

pub(crate) async fn write_stream_head<W: AsyncWrite + Unpin>(w: &mut W) -> io::Result<()> {
    w.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
          Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )
    .await?;
    w.flush().await
}

/// One HTTP chunk, in a single write so it leaves as one segment (with `TCP_NODELAY`).
pub(crate) async fn write_chunk<W: AsyncWrite + Unpin>(w: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        // A zero-length chunk is the end-of-body marker; never emit one by accident.
        return Ok(());
    }
    let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
    frame.extend_from_slice(data);
    frame.extend_from_slice(b"\r\n");
    w.write_all(&frame).await?;
    w.flush().await
}

pub(crate) async fn write_last_chunk<W: AsyncWrite + Unpin>(w: &mut W) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n").await?;
    w.flush().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn parse(raw: &[u8]) -> Result<Request, ReadError> {
        let mut reader = raw;
        read_request(&mut reader).await
    }

    #[tokio::test]
    async fn parses_content_length_body_and_lowercases_headers() {
        let req = parse(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
            .await
            .unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.target, "/v1/chat/completions");
        assert_eq!(req.header("content-type"), Some("application/json"));
        assert_eq!(req.body, b"{\"a\":1}");
    }

    #[tokio::test]
    async fn parses_chunked_body_with_extensions_and_trailers() {
        let req = parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nTrailer: t\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(req.body, b"{\"a\":1}");
    }

    #[tokio::test]
    async fn rejects_truncated_and_garbage_requests() {
        assert!(matches!(parse(b"").await, Err(ReadError::Closed)));
        assert!(matches!(
            parse(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc").await,
            Err(ReadError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"HELLO\r\n\r\n").await,
            Err(ReadError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"GET / SPDY/3\r\n\r\n").await,
            Err(ReadError::Malformed(_))
        ));
    }

    #[tokio::test]
    async fn chunk_framing_is_hex_length_and_crlf() {
        let mut out = Vec::new();
        write_chunk(&mut out, &[b'x'; 26]).await.unwrap();
        write_chunk(&mut out, b"").await.unwrap();
        write_last_chunk(&mut out).await.unwrap();
        let mut expected = b"1a\r\n".to_vec();
        expected.extend_from_slice(&[b'x'; 26]);
        expected.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(out, expected);
    }

    #[test]
    fn error_body_has_openai_shape() {
        let body = error_body(429, "slow down");
        assert_eq!(body["error"]["message"], "slow down");
        assert_eq!(body["error"]["type"], "requests");
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert!(body["error"]["param"].is_null());
        assert!(error_body(500, "x")["error"]["code"].is_null());
    }
}
