//! The bounded hand-off between the capture thread and the OCR thread.
//!
//! When OCR falls behind, the OLDEST queued frame is dropped (and counted): the newest frame is what is on
//! screen now, and the next diff is computed against the last frame that was sent, so text from a dropped
//! frame that is still visible is read from the newer one.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

pub(crate) struct DropOldest<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    closed: bool,
    dropped: u64,
}

impl<T> DropOldest<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
                dropped: 0,
            }),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Queues `item`; returns whether an older item was dropped to make room.
    pub(crate) fn push(&self, item: T) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut dropped = false;
        while state.items.len() >= self.capacity {
            state.items.pop_front();
            state.dropped += 1;
            dropped = true;
        }
        state.items.push_back(item);
        drop(state);
        self.ready.notify_one();
        dropped
    }

    /// The next item; `None` once closed (queued items are discarded: the watcher is stopping).
    pub(crate) fn pop(&self) -> Option<T> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.closed {
                return None;
            }
            if let Some(item) = state.items.pop_front() {
                return Some(item);
            }
            state = self
                .ready
                .wait_timeout(state, Duration::from_millis(500))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub(crate) fn close(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        self.ready.notify_all();
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn full_queue_drops_the_oldest_and_counts() {
        let queue = DropOldest::new(2);
        assert!(!queue.push(1));
        assert!(!queue.push(2));
        assert!(queue.push(3));
        assert_eq!(queue.dropped(), 1);
        assert_eq!(queue.pop(), Some(2));
        assert_eq!(queue.pop(), Some(3));
    }

    #[test]
    fn close_wakes_a_waiting_consumer() {
        let queue = Arc::new(DropOldest::<u32>::new(1));
        let consumer = {
            let queue = Arc::clone(&queue);
            std::thread::spawn(move || queue.pop())
        };
        std::thread::sleep(Duration::from_millis(50));
        queue.close();
        assert_eq!(consumer.join().unwrap(), None);
    }
}
