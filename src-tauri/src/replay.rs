//! Session events kept for a webview that reloads: it asks for everything after the last `seq` it applied.
//! Same contract as `tomo serve`'s replay buffer (tomo-server's `hub.rs`), minus the per-client queues a
//! single in-process webview does not need: live events go out as Tauri events, this only answers
//! "what did I miss".

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tomo_protocol::EventEnvelope;

/// What `events_since` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct EventsSince {
    /// Every kept event with `seq > last_seq`, in order.
    pub events: Vec<EventEnvelope>,
    /// Events `missed_from..=missed_to` were evicted before the webview asked: it should reset its view.
    pub missed_from: Option<u64>,
    pub missed_to: Option<u64>,
    /// The newest `seq` the session emitted so far (0: none yet).
    pub latest_seq: u64,
}

#[derive(Debug)]
pub struct Replay {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    ring: VecDeque<EventEnvelope>,
    latest_seq: u64,
}

impl Replay {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing half-updated under this lock can matter more than keeping the app alive.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn push(&self, envelope: &EventEnvelope) {
        let mut inner = self.lock();
        inner.latest_seq = envelope.seq;
        inner.ring.push_back(envelope.clone());
        while inner.ring.len() > self.capacity {
            inner.ring.pop_front();
        }
    }

    /// Events after `last_seq`. A `last_seq` newer than anything emitted (a webview that outlived an
    /// earlier backend) gets the whole buffer, like a new client.
    pub fn since(&self, last_seq: u64) -> EventsSince {
        let inner = self.lock();
        let after = if last_seq > inner.latest_seq {
            0
        } else {
            last_seq
        };
        let oldest = inner.ring.front().map_or(inner.latest_seq + 1, |e| e.seq);
        let (missed_from, missed_to) = if after + 1 < oldest {
            (Some(after + 1), Some(oldest - 1))
        } else {
            (None, None)
        };
        let start = inner.ring.partition_point(|e| e.seq <= after);
        EventsSince {
            events: inner.ring.range(start..).cloned().collect(),
            missed_from,
            missed_to,
            latest_seq: inner.latest_seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn seqs(answer: &EventsSince) -> Vec<u64> {
        answer.events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn replays_after_last_seq_and_reports_evicted_events() {
        let replay = Replay::new(3);
        for seq in 1..=6 {
            replay.push(&envelope(seq));
        }
        let answer = replay.since(4);
        assert_eq!(seqs(&answer), vec![5, 6]);
        assert_eq!(answer.missed_from, None);
        let answer = replay.since(1);
        assert_eq!(seqs(&answer), vec![4, 5, 6]);
        assert_eq!((answer.missed_from, answer.missed_to), (Some(2), Some(3)));
        assert_eq!(answer.latest_seq, 6);
    }

    #[test]
    fn a_seq_from_the_future_gets_everything() {
        let replay = Replay::new(10);
        replay.push(&envelope(1));
        replay.push(&envelope(2));
        assert_eq!(seqs(&replay.since(99)), vec![1, 2]);
        assert!(replay.since(2).events.is_empty());
    }
}
