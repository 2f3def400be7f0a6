//! Session events kept for a webview that reloads: it asks for everything after the last `seq` it applied.
//! The ring and its contract are `tomo serve`'s ([`tomo_server::ReplayRing`]); live events go out as Tauri
//! events, this only answers "what did I miss".

use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tomo_protocol::EventEnvelope;
use tomo_server::ReplayRing;

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
    ring: Mutex<ReplayRing<EventEnvelope>>,
}

impl Replay {
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            ring: Mutex::new(ReplayRing::new(capacity, max_bytes)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ReplayRing<EventEnvelope>> {
        // Nothing half-updated under this lock can matter more than keeping the app alive.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn push(&self, envelope: &EventEnvelope) {
        // The size it takes on the wire to the webview, which is what the byte bound is about.
        let size = serde_json::to_string(envelope).map_or(0, |json| json.len());
        self.lock().push(envelope.seq, size, envelope.clone());
    }

    /// Events after `last_seq`. A `last_seq` newer than anything emitted (a webview that outlived an
    /// earlier backend) gets the whole buffer, like a new client.
    pub fn since(&self, last_seq: u64) -> EventsSince {
        let replay = self.lock().since(last_seq);
        EventsSince {
            events: replay.items,
            missed_from: replay.gap.map(|(from, _)| from),
            missed_to: replay.gap.map(|(_, to)| to),
            latest_seq: replay.latest_seq,
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
        let replay = Replay::new(3, 1 << 20);
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
        let replay = Replay::new(10, 1 << 20);
        replay.push(&envelope(1));
        replay.push(&envelope(2));
        assert_eq!(seqs(&replay.since(99)), vec![1, 2]);
        assert!(replay.since(2).events.is_empty());
    }
}
