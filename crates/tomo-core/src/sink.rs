//! Where a turn's sentences go: the text client, or (voice) TTS and the speakers.
//!
//! The session hands sentences over one by one as the pipeline produces them, then waits for
//! [`OutputSink::finish_turn`] to resolve before it fires `on_after_playback`. An audio sink resolves it when
//! the last sample has been played; the [`TextSink`] resolves it as soon as the last sentence has been
//! delivered (the session emits each sentence as an event before handing it to the sink).

use futures::future::BoxFuture;

use crate::protocol::{Sentence, TurnId};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SinkError {
    #[error("output device unavailable: {0}")]
    Unavailable(String),
    #[error("output interrupted")]
    Interrupted,
}

pub trait OutputSink: Send + Sync {
    /// Queue one sentence of `turn`. Must return quickly: synthesis and playback happen behind it.
    fn enqueue(&self, turn: TurnId, sentence: Sentence) -> Result<(), SinkError>;

    /// No more sentences for `turn`. Resolves when everything queued for it has been delivered (audio:
    /// played to the end), or with [`SinkError::Interrupted`] if [`OutputSink::interrupt`] cut it short.
    fn finish_turn(&self, turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>>;

    /// Stop output now and drop everything queued.
    fn interrupt(&self);
}

/// Text mode: a sentence is delivered the moment the session emits it, so the sink is drained at once.
#[derive(Debug, Default, Clone, Copy)]
pub struct TextSink;

impl OutputSink for TextSink {
    fn enqueue(&self, _turn: TurnId, _sentence: Sentence) -> Result<(), SinkError> {
        Ok(())
    }

    fn finish_turn(&self, _turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>> {
        Box::pin(async { Ok(()) })
    }

    fn interrupt(&self) {}
}
