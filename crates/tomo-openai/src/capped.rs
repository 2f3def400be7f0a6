//! The HTTP transport under async-openai, with the bounds its SSE parser lacks: one server-sent event
//! (its lines up to the blank line that ends it) may hold at most [`BodyLimits::max_event_bytes`], and
//! a whole response at most [`BodyLimits::max_body_bytes`]. A server that never sends a newline, or
//! never ends its answer, would otherwise be buffered until memory runs out: the parser keeps an
//! unfinished event whole, and its reading task forwards into an unbounded channel.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};

/// How much of a response is read before it is cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// One SSE event: a streamed chunk is a few hundred bytes, a big tool call a few dozen KB.
    pub max_event_bytes: usize,
    /// The whole response body.
    pub max_body_bytes: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        Self {
            max_event_bytes: 1024 * 1024,
            max_body_bytes: 32 * 1024 * 1024,
        }
    }
}

/// Why the last response was cut off. The transport's error reaches the caller only as reqwest's
/// "request or response body error" (async-openai keeps the error's text, not its source), so the
/// reason is left here for the stream decoder to report instead.
#[derive(Debug, Clone, Default)]
pub(crate) struct CutReason(Arc<Mutex<Option<String>>>);

impl CutReason {
    fn set(&self, reason: String) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
    }

    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// [`ReqwestService`] whose responses are read through [`capped_body`].
#[derive(Clone)]
pub(crate) struct CappedService {
    inner: ReqwestService,
    limits: BodyLimits,
    cut: CutReason,
}

impl CappedService {
    pub(crate) fn new(http: reqwest::Client, limits: BodyLimits, cut: CutReason) -> Self {
        Self {
            inner: ReqwestService::new(http),
            limits,
            cut,
        }
    }
}

impl tower_service::Service<HttpRequestFactory> for CappedService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = BoxFuture<'static, Result<reqwest::Response, OpenAIError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let response = self.inner.call(request);
        let limits = self.limits;
        let cut = self.cut.clone();
        Box::pin(async move { Ok(capped_response(response.await?, limits, cut)) })
    }
}

fn capped_response(
    response: reqwest::Response,
    limits: BodyLimits,
    cut: CutReason,
) -> reqwest::Response {
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let body = reqwest::Body::wrap_stream(capped_body(response.bytes_stream(), limits, cut));
    let mut capped = http::Response::new(body);
    *capped.status_mut() = status;
    *capped.version_mut() = version;
    *capped.headers_mut() = headers;
    reqwest::Response::from(capped)
}

/// `body` until an event or the whole body grows past `limits`; then one error, and the end.
pub(crate) fn capped_body<S, E>(
    body: S,
    limits: BodyLimits,
    cut: CutReason,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut counter = EventCounter::default();
    body.scan(false, move |failed, chunk| {
        // Nothing after the first error: the parser must not resume mid-event.
        if *failed {
            return futures::future::ready(None);
        }
        let item = chunk.map_err(std::io::Error::other).and_then(|chunk| {
            counter
                .feed(&chunk, limits)
                .map(|()| chunk)
                .map_err(|reason| {
                    tracing::warn!(%reason, "LLM response cut off");
                    cut.set(reason.to_string());
                    std::io::Error::other(reason)
                })
        });
        *failed = item.is_err();
        futures::future::ready(Some(item))
    })
}

/// Which limit a response crossed.
#[derive(Debug, thiserror::Error)]
enum LimitExceeded {
    #[error("the answer exceeded {0} bytes and was cut off")]
    Body(usize),
    #[error(
        "one streamed event exceeded {0} bytes (a server that never ends a line?) and was cut off"
    )]
    Event(usize),
}

/// Bytes of the event being received and of the whole body. An event ends at a blank line (`\n\n`;
/// `\r` is ignored, so `\r\n\r\n` counts too).
#[derive(Debug, Default)]
struct EventCounter {
    in_event: usize,
    total: usize,
    after_newline: bool,
}

impl EventCounter {
    fn feed(&mut self, chunk: &[u8], limits: BodyLimits) -> Result<(), LimitExceeded> {
        self.total += chunk.len();
        if self.total > limits.max_body_bytes {
            return Err(LimitExceeded::Body(limits.max_body_bytes));
        }
        for &byte in chunk {
            match byte {
                b'\n' if self.after_newline => self.in_event = 0,
                b'\n' => self.after_newline = true,
                b'\r' => {}
                _ => self.after_newline = false,
            }
            self.in_event += 1;
            if self.in_event > limits.max_event_bytes {
                return Err(LimitExceeded::Event(limits.max_event_bytes));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const SMALL: BodyLimits = BodyLimits {
        max_event_bytes: 16,
        max_body_bytes: 64,
    };

    #[test]
    fn events_end_at_blank_lines() {
        let mut counter = EventCounter::default();
        // Many short events: never more than 16 bytes in one.
        for _ in 0..3 {
            counter.feed(b"data: 0123\n\n", SMALL).unwrap();
        }
        counter.feed(b"data: 01\r\n\r\n", SMALL).unwrap();
        // Lines of one event add up; `\r\n` alone ends a line, not the event.
        let mut counter = EventCounter::default();
        counter.feed(b"data: 0123\r\n", SMALL).unwrap();
        assert!(counter.feed(b"data: 0123\r\n", SMALL).is_err());
    }

    #[test]
    fn the_body_has_a_total_cap() {
        let mut counter = EventCounter::default();
        for _ in 0..5 {
            counter.feed(b"data: 01\n\n", SMALL).unwrap();
        }
        let error = counter.feed(&[b'\n'; 30], SMALL).unwrap_err().to_string();
        assert!(error.contains("64 bytes"), "{error}");
    }

    #[tokio::test]
    async fn a_cut_body_ends_after_one_error_and_leaves_its_reason() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"data: ok\n\n")),
            Ok(Bytes::from(vec![b'x'; 40])),
            Ok(Bytes::from_static(b"data: never read\n\n")),
        ];
        let cut = CutReason::default();
        let out: Vec<_> = capped_body(futures::stream::iter(chunks), SMALL, cut.clone())
            .collect()
            .await;
        assert_eq!(out.len(), 2);
        assert!(out[0].is_ok());
        assert!(out[1].is_err());
        let reason = cut.take().unwrap();
        assert!(reason.contains("16 bytes"), "{reason}");
        assert!(cut.take().is_none());
    }
}
