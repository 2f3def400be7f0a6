//! Fan-out of session events to clients, with a bounded replay buffer for reconnects.
//!
//! One mutex guards the buffer and the client list, so "replay what you missed" and "now follow live
//! events" are one atomic step: an event is either in a new client's replay or in its queue, never both,
//! never neither. That is what makes a reconnect deliver every missed event exactly once.
//!
//! Backpressure policy: the session must never wait for a client. Each client has a bounded queue
//! ([`Hub::new`]'s `client_queue` frames); when an event does not fit, that client is dropped from the hub.
//! Its socket task drains what was queued, closes the socket with code 1013 ("try again later"), and the
//! client reconnects with `?last_seq=` to replay the rest from the buffer.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::ws::Utf8Bytes;
use tokio::sync::mpsc;
use tomo_protocol::{EventEnvelope, ServerFrame};

use crate::replay::ReplayRing;

#[derive(Debug)]
pub(crate) struct Hub {
    client_queue: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Serialized events, shared by the buffer and every client queue.
    ring: ReplayRing<Utf8Bytes>,
    clients: Vec<(u64, mpsc::Sender<Utf8Bytes>)>,
    next_client: u64,
    /// The session ended or the server is shutting down: no new live events.
    closed: bool,
}

/// What a new client gets: frames to send first, then the live queue.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub id: u64,
    pub replay: Vec<Utf8Bytes>,
    pub live: mpsc::Receiver<Utf8Bytes>,
}

impl Hub {
    /// Keeps the last `capacity` events, at most `max_bytes` of them.
    pub fn new(capacity: usize, max_bytes: usize, client_queue: usize) -> Self {
        Self {
            client_queue: client_queue.max(1),
            inner: Mutex::new(Inner {
                ring: ReplayRing::new(capacity, max_bytes),
                clients: Vec::new(),
                next_client: 0,
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the buffer half-updated in a way that matters
        // more than stopping the whole server would.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forwards session events until the session ends, then closes every client.
    pub async fn pump(self: Arc<Self>, mut events: mpsc::UnboundedReceiver<EventEnvelope>) {
        while let Some(envelope) = events.recv().await {
            self.publish(&envelope);
        }
        tracing::info!("session ended; closing client sockets");
        self.close();
    }

    pub fn publish(&self, envelope: &EventEnvelope) {
        let json = match serde_json::to_string(envelope) {
            Ok(json) => Utf8Bytes::from(json),
            Err(error) => {
                // Cannot happen for plain serde types; never drop silently if it does.
                tracing::error!(seq = envelope.seq, %error, "cannot serialize event");
                return;
            }
        };
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        inner.ring.push(envelope.seq, json.len(), json.clone());
        inner
            .clients
            .retain(|(id, queue)| match queue.try_send(json.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(
                        client = id,
                        seq = envelope.seq,
                        "client too slow; disconnecting it"
                    );
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
    }

    /// Registers a client that has processed every event up to `last_seq` (0: none).
    pub fn subscribe(&self, last_seq: u64) -> Subscription {
        let (tx, live) = mpsc::channel(self.client_queue);
        let mut inner = self.lock();
        let id = inner.next_client;
        inner.next_client += 1;
        let since = inner.ring.since(last_seq);
        let mut replay = Vec::new();
        if since.reset {
            replay.push(control(&ServerFrame::SessionReset {
                latest_seq: since.latest_seq,
            }));
        }
        if let Some((missed_from, missed_to)) = since.gap {
            replay.push(control(&ServerFrame::ReplayGap {
                missed_from,
                missed_to,
            }));
        }
        replay.extend(since.items);
        if !inner.closed {
            inner.clients.push((id, tx));
        }
        Subscription { id, replay, live }
    }

    pub fn unsubscribe(&self, id: u64) {
        self.lock().clients.retain(|(client, _)| *client != id);
    }

    /// Whether live events stopped for good (session over or server stopping).
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        inner.clients.clear();
    }

    pub fn latest_seq(&self) -> u64 {
        self.lock().ring.latest_seq()
    }

    pub fn client_count(&self) -> usize {
        self.lock().clients.len()
    }
}

/// A frame the server makes itself (no `seq`).
pub(crate) fn control(frame: &ServerFrame) -> Utf8Bytes {
    // Plain serde types: serializing cannot fail; an empty frame would be refused by the client parser.
    Utf8Bytes::from(serde_json::to_string(frame).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tomo_protocol::Event;

    fn envelope(seq: u64) -> EventEnvelope {
        EventEnvelope {
            seq,
            event: Event::TextDelta {
                turn_id: 1,
                delta: format!("d{seq}"),
            },
        }
    }

    fn seqs(frames: &[Utf8Bytes]) -> Vec<serde_json::Value> {
        frames
            .iter()
            .map(|f| {
                let v: serde_json::Value = serde_json::from_str(f.as_str()).unwrap();
                v.get("seq").cloned().unwrap_or_else(|| v["type"].clone())
            })
            .collect()
    }

    #[test]
    fn replay_starts_after_last_seq() {
        let hub = Hub::new(10, 1 << 20, 4);
        for seq in 1..=5 {
            hub.publish(&envelope(seq));
        }
        let sub = hub.subscribe(3);
        assert_eq!(seqs(&sub.replay), vec![json!(4), json!(5)]);
        let sub = hub.subscribe(5);
        assert!(sub.replay.is_empty());
    }

    #[test]
    fn evicted_events_are_reported_as_a_gap() {
        let hub = Hub::new(3, 1 << 20, 4);
        for seq in 1..=6 {
            hub.publish(&envelope(seq));
        }
        let sub = hub.subscribe(1);
        assert_eq!(
            seqs(&sub.replay),
            vec![json!("replay_gap"), json!(4), json!(5), json!(6)]
        );
        let gap: serde_json::Value = serde_json::from_str(sub.replay[0].as_str()).unwrap();
        assert_eq!(gap["missed_from"], 2);
        assert_eq!(gap["missed_to"], 3);
        // Exactly at the edge: nothing is missing.
        assert_eq!(seqs(&hub.subscribe(3).replay).len(), 3);
    }

    #[test]
    fn a_seq_from_an_earlier_server_resets() {
        let hub = Hub::new(10, 1 << 20, 4);
        hub.publish(&envelope(1));
        let sub = hub.subscribe(99);
        assert_eq!(seqs(&sub.replay), vec![json!("session_reset"), json!(1)]);
    }

    #[tokio::test]
    async fn a_client_whose_queue_overflows_is_dropped_and_others_are_not() {
        let hub = Hub::new(100, 1 << 20, 2);
        let mut slow = hub.subscribe(0);
        let mut fast = hub.subscribe(0);
        for seq in 1..=5 {
            hub.publish(&envelope(seq));
            // The fast client keeps up.
            assert!(fast.live.recv().await.is_some());
        }
        assert_eq!(hub.client_count(), 1);
        // The slow one gets what fit, then the end of its queue.
        assert!(slow.live.recv().await.is_some());
        assert!(slow.live.recv().await.is_some());
        assert!(slow.live.recv().await.is_none());
        // Reconnecting replays the rest.
        assert_eq!(seqs(&hub.subscribe(2).replay).len(), 3);
    }
}
