//! The front end's one-line notices ("! no microphone …", "* microphone back …") as `notice` ops, so every
//! client of the session shows them (the desktop app has no terminal). Notices said before the session
//! exists (models, speakers) are kept and sent once it runs.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;
use tomo_protocol::{NoticeLevel, Op};

use crate::listen::Notify;

#[derive(Default)]
struct Inner {
    ops: Option<mpsc::Sender<Op>>,
    early: Vec<Op>,
}

/// Collects notices and forwards them to the session once [`SessionNotices::connect`] is called.
#[derive(Clone, Default)]
pub struct SessionNotices {
    inner: Arc<Mutex<Inner>>,
}

impl SessionNotices {
    pub fn new() -> Self {
        Self::default()
    }

    /// The callback to hand to the front end's parts (it also logs each line).
    pub fn notify(&self) -> Notify {
        let inner = Arc::clone(&self.inner);
        Arc::new(move |line: &str| {
            tracing::warn!("{line}");
            let op = notice_op(line);
            let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
            match &inner.ops {
                // Full queue: the session is far behind; a notice is not worth blocking the audio thread.
                Some(ops) => {
                    if ops.try_send(op).is_err() {
                        tracing::debug!("notice dropped: the session is busy or gone");
                    }
                }
                None => inner.early.push(op),
            }
        })
    }

    /// The session runs: send what was said before, then forward from now on.
    pub fn connect(&self, ops: mpsc::Sender<Op>) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for op in inner.early.drain(..) {
            let _ = ops.try_send(op);
        }
        inner.ops = Some(ops);
    }
}

/// `! …` is a warning, `* …` information, anything else a warning; the marker is not part of the text.
pub fn notice_op(line: &str) -> Op {
    let (level, message) = match line.split_at_checked(2) {
        Some(("! ", rest)) => (NoticeLevel::Warning, rest),
        Some(("* ", rest)) => (NoticeLevel::Info, rest),
        _ => (NoticeLevel::Warning, line),
    };
    Op::Notice {
        level,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(level: NoticeLevel, message: &str) -> Op {
        Op::Notice {
            level,
            message: message.to_owned(),
        }
    }

    #[test]
    fn early_notices_wait_for_the_session_then_everything_is_forwarded_in_order() {
        let notices = SessionNotices::new();
        let notify = notices.notify();
        notify("! no speakers (device busy); answers are text only");
        let (tx, mut rx) = mpsc::channel(8);
        notices.connect(tx);
        notify("* microphone back: USB headset");
        notify("plain line");
        let mut got = Vec::new();
        while let Ok(op) = rx.try_recv() {
            got.push(op);
        }
        assert_eq!(
            got,
            [
                notice(
                    NoticeLevel::Warning,
                    "no speakers (device busy); answers are text only"
                ),
                notice(NoticeLevel::Info, "microphone back: USB headset"),
                notice(NoticeLevel::Warning, "plain line"),
            ]
        );
    }
}
