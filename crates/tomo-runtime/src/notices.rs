//! What the front end around the session (microphone, speakers, model installer) has to tell the user:
//! typed notices, sent as `notice` ops so every client of the session shows them (the desktop app has no
//! terminal). Notices said before the session exists (models, speakers) are kept and sent once it runs.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;
use tomo_protocol::{NoticeLevel, Op};

/// One thing to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub level: NoticeLevel,
    pub message: String,
}

impl Notice {
    /// Something is missing or went wrong; Tomo carries on without it.
    pub fn warning(message: impl Into<String>) -> Self {
        Self {
            level: NoticeLevel::Warning,
            message: message.into(),
        }
    }

    /// Something stays broken until the user acts ("the embedded brain stopped; restart Tomo").
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            level: NoticeLevel::Error,
            message: message.into(),
        }
    }

    /// Good news or a plain fact ("microphone back").
    pub fn info(message: impl Into<String>) -> Self {
        Self {
            level: NoticeLevel::Info,
            message: message.into(),
        }
    }
}

/// A terminal line: `! ` for problems, `* ` for information.
impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let marker = match self.level {
            NoticeLevel::Info => '*',
            NoticeLevel::Warning | NoticeLevel::Error => '!',
        };
        write!(f, "{marker} {}", self.message)
    }
}

/// Where the front end's parts send notices.
pub type Notify = Arc<dyn Fn(Notice) + Send + Sync>;

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

    /// The callback to hand to the front end's parts (it also logs each notice).
    pub fn notify(&self) -> Notify {
        let inner = Arc::clone(&self.inner);
        Arc::new(move |notice: Notice| {
            match notice.level {
                NoticeLevel::Info => tracing::info!("{}", notice.message),
                NoticeLevel::Warning | NoticeLevel::Error => tracing::warn!("{}", notice.message),
            }
            let op = Op::Notice {
                level: notice.level,
                message: notice.message,
            };
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
        notify(Notice::warning(
            "no speakers (device busy); answers are text only",
        ));
        let (tx, mut rx) = mpsc::channel(8);
        notices.connect(tx);
        notify(Notice::info("microphone back: USB headset"));
        notify(Notice::warning("plain line"));
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

    #[test]
    fn a_notice_reads_as_a_terminal_line() {
        assert_eq!(Notice::warning("no mic").to_string(), "! no mic");
        assert_eq!(Notice::info("listening").to_string(), "* listening");
    }
}
