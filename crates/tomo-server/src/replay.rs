//! The replay ring every front end keeps for a client that comes back: "everything after `last_seq`",
//! with the gap named when the oldest missed events were evicted and a reset when the client's
//! `last_seq` comes from an earlier session. `tomo serve` keeps serialized frames in it, the desktop app
//! the events themselves; both use this one contract.
//!
//! Bounded twice: by the number of events and by their bytes, so a few huge events (a long tool result,
//! a big envelope) cannot pin memory while the count looks small.

use std::collections::VecDeque;

/// What a returning client is owed.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay<T> {
    /// Every kept item with `seq > last_seq`, in order.
    pub items: Vec<T>,
    /// Items `from..=to` were evicted before the client asked: it should reset its view.
    pub gap: Option<(u64, u64)>,
    /// The client's `last_seq` is newer than anything this session emitted (it talked to an earlier
    /// process): `items` is the whole ring, as for a new client.
    pub reset: bool,
    /// The newest `seq` emitted so far (0: none yet).
    pub latest_seq: u64,
}

#[derive(Debug)]
pub struct ReplayRing<T> {
    max_items: usize,
    max_bytes: usize,
    ring: VecDeque<(u64, usize, T)>,
    bytes: usize,
    latest_seq: u64,
}

impl<T: Clone> ReplayRing<T> {
    pub fn new(max_items: usize, max_bytes: usize) -> Self {
        Self {
            max_items: max_items.max(1),
            max_bytes: max_bytes.max(1),
            ring: VecDeque::new(),
            bytes: 0,
            latest_seq: 0,
        }
    }

    /// Keeps `item` (event `seq`, about `size` bytes), evicting the oldest beyond either bound. The
    /// newest item is always kept, however big.
    pub fn push(&mut self, seq: u64, size: usize, item: T) {
        self.latest_seq = seq;
        self.ring.push_back((seq, size, item));
        self.bytes += size;
        while self.ring.len() > 1
            && (self.ring.len() > self.max_items || self.bytes > self.max_bytes)
        {
            if let Some((_, size, _)) = self.ring.pop_front() {
                self.bytes -= size;
            }
        }
    }

    pub fn latest_seq(&self) -> u64 {
        self.latest_seq
    }

    /// Bytes held right now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn since(&self, last_seq: u64) -> Replay<T> {
        let reset = last_seq > self.latest_seq;
        let after = if reset { 0 } else { last_seq };
        let oldest = self
            .ring
            .front()
            .map_or(self.latest_seq + 1, |(seq, ..)| *seq);
        let gap = (after + 1 < oldest).then(|| (after + 1, oldest - 1));
        let start = self.ring.partition_point(|(seq, ..)| *seq <= after);
        Replay {
            items: self
                .ring
                .range(start..)
                .map(|(.., item)| item.clone())
                .collect(),
            gap,
            reset,
            latest_seq: self.latest_seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(
        max_items: usize,
        max_bytes: usize,
        seqs: std::ops::RangeInclusive<u64>,
    ) -> ReplayRing<u64> {
        let mut ring = ReplayRing::new(max_items, max_bytes);
        for seq in seqs {
            ring.push(seq, 10, seq);
        }
        ring
    }

    #[test]
    fn replays_after_last_seq_and_names_what_was_evicted() {
        let ring = ring(3, 1 << 20, 1..=6);
        let replay = ring.since(4);
        assert_eq!(replay.items, vec![5, 6]);
        assert_eq!(replay.gap, None);
        let replay = ring.since(1);
        assert_eq!(replay.items, vec![4, 5, 6]);
        assert_eq!(replay.gap, Some((2, 3)));
        assert_eq!(replay.latest_seq, 6);
        // Exactly at the edge nothing is missing.
        assert_eq!(ring.since(3).gap, None);
    }

    #[test]
    fn a_seq_from_an_earlier_session_resets() {
        let ring = ring(10, 1 << 20, 1..=2);
        let replay = ring.since(99);
        assert!(replay.reset);
        assert_eq!(replay.items, vec![1, 2]);
        assert!(ring.since(2).items.is_empty());
        assert!(!ring.since(2).reset);
    }

    #[test]
    fn bytes_bound_the_ring_too() {
        let mut ring = ring(1000, 35, 1..=10);
        assert_eq!(ring.since(0).items, vec![8, 9, 10]);
        assert_eq!(ring.bytes(), 30);
        // One item bigger than the bound: kept alone (the newest is never dropped).
        ring.push(11, 100, 11);
        assert_eq!(ring.since(0).items, vec![11]);
        assert_eq!(ring.since(0).gap, Some((1, 10)));
    }
}
