//! The engine's waiting line: conversation requests before side requests.
//!
//! The engine serves one request at a time, and a side request (memory extraction after a turn, a summary)
//! runs for seconds on two cores: prompt evaluation plus some 50 tokens. Measured with Hana's profile and
//! the default brain (`tomo chat`, the second message sent 12 s after the first): the second answer's first
//! token came 4.98 s after the message, 4 s of it behind the first turn's memory extraction. So the
//! conversation goes first: it is taken before any side request waiting, and a side request being served
//! stops between two of its steps to serve the conversation requests that arrived, then goes on where it
//! was (its cache sequence is kept; see `Engine::serve_urgent`).

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, TryRecvError};

use tomo_llm::Priority;

/// What the queue needs to know of a job.
pub trait Queued {
    fn priority(&self) -> Priority;
}

impl Queued for crate::engine::Job {
    fn priority(&self) -> Priority {
        self.request.priority
    }
}

pub struct Queue<J> {
    incoming: Receiver<J>,
    /// Jobs received but not served yet, in arrival order.
    waiting: VecDeque<J>,
    /// The channel closed: no job will come any more.
    closed: bool,
}

impl<J: Queued> Queue<J> {
    pub fn new(incoming: Receiver<J>) -> Self {
        Self {
            incoming,
            waiting: VecDeque::new(),
            closed: false,
        }
    }

    /// The next job to serve, waiting for one if there is none: the first conversation job, else the
    /// oldest side job. `None` once the channel is closed and nothing waits.
    pub fn next(&mut self) -> Option<J> {
        if let Some(job) = self.urgent() {
            return Some(job);
        }
        if let Some(job) = self.waiting.pop_front() {
            return Some(job);
        }
        if self.closed {
            return None;
        }
        self.incoming.recv().ok()
    }

    /// A conversation job that has arrived, if any (without waiting); side jobs that arrived wait their
    /// turn.
    pub fn urgent(&mut self) -> Option<J> {
        self.receive();
        let index = self
            .waiting
            .iter()
            .position(|job| job.priority() == Priority::Conversation)?;
        self.waiting.remove(index)
    }

    fn receive(&mut self) {
        while !self.closed {
            match self.incoming.try_recv() {
                Ok(job) => self.waiting.push_back(job),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => self.closed = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Named(&'static str, Priority);

    impl Queued for Named {
        fn priority(&self) -> Priority {
            self.1
        }
    }

    const SIDE: Priority = Priority::Background;
    const TURN: Priority = Priority::Conversation;

    #[test]
    fn the_conversation_goes_before_side_jobs_and_each_kind_keeps_its_order() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut queue = Queue::new(rx);
        for job in [
            Named("memory", SIDE),
            Named("turn 1", TURN),
            Named("summary", SIDE),
            Named("turn 2", TURN),
        ] {
            tx.send(job).unwrap();
        }
        drop(tx);
        let order: Vec<&str> = std::iter::from_fn(|| queue.next()).map(|j| j.0).collect();
        assert_eq!(order, ["turn 1", "turn 2", "memory", "summary"]);
    }

    #[test]
    fn only_conversation_jobs_are_urgent() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut queue = Queue::new(rx);
        tx.send(Named("summary", SIDE)).unwrap();
        assert_eq!(
            queue.urgent(),
            None,
            "a side job does not interrupt another"
        );
        tx.send(Named("turn", TURN)).unwrap();
        assert_eq!(queue.urgent(), Some(Named("turn", TURN)));
        assert_eq!(queue.urgent(), None);
        // The side job that arrived meanwhile was kept for later.
        assert_eq!(queue.next(), Some(Named("summary", SIDE)));
    }

    #[test]
    fn a_closed_channel_still_hands_out_what_waits_then_ends() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut queue = Queue::new(rx);
        tx.send(Named("memory", SIDE)).unwrap();
        tx.send(Named("turn", TURN)).unwrap();
        drop(tx);
        assert_eq!(queue.urgent(), Some(Named("turn", TURN)));
        assert_eq!(queue.next(), Some(Named("memory", SIDE)));
        assert_eq!(queue.next(), None);
    }
}
