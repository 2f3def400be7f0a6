//! Where a turn's sentences go: the text client, or (voice) TTS and the speakers.
//!
//! The session hands sentences over one by one as the pipeline produces them, then waits for
//! [`OutputSink::finish_turn`] to resolve before it fires `on_after_playback`. An audio sink resolves it when
//! the last sample has been played; the [`TextSink`] resolves it as soon as the last sentence has been
//! delivered (the session emits each sentence as an event before handing it to the sink).

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use tomo_config::profile::Profile;
use tomo_protocol::{Event, Sentence, TurnId};

/// Lets a sink report what it does (e.g. `audio_started`) through the session, which sequences the events.
#[derive(Debug, Clone)]
pub struct SinkEvents(mpsc::UnboundedSender<Event>);

impl SinkEvents {
    pub fn new(sender: mpsc::UnboundedSender<Event>) -> Self {
        Self(sender)
    }

    /// Sends an event; silently dropped once the session is gone (nobody is listening then).
    pub fn send(&self, event: Event) {
        let _ = self.0.send(event);
    }
}

/// Where playback of a turn stands: every sentence before `sentence` was heard whole, and `sentence`
/// itself up to `fraction` (0-1) of its audio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Playhead {
    pub sentence: u32,
    pub fraction: f32,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SinkError {
    #[error("output device unavailable: {0}")]
    Unavailable(String),
    #[error("output interrupted")]
    Interrupted,
    /// The new character's voice could not be set up; the sink keeps the voice it had.
    #[error("voice unavailable: {0}")]
    Voice(String),
}

impl SinkError {
    /// A device may come back (the next sentence reopens it); a voice that did not switch stays as it was.
    pub fn is_recoverable(&self) -> bool {
        match self {
            Self::Unavailable(_) | Self::Interrupted => true,
            Self::Voice(_) => false,
        }
    }
}

pub trait OutputSink: Send + Sync {
    /// Called once when a session starts using the sink. Sinks that report events keep the handle.
    fn attach(&self, _events: SinkEvents) {}

    /// Queue one sentence of `turn`. Must return quickly: synthesis and playback happen behind it.
    fn enqueue(&self, turn: TurnId, sentence: Sentence) -> Result<(), SinkError>;

    /// The first sentence of `turn` will probably say `tts_text`: the model's text stopped at a
    /// sentence end that only its next delta confirms. A sink may start synthesizing it now and use that
    /// audio if [`OutputSink::enqueue`] brings the same text; anything else discards it. Must return
    /// quickly.
    fn prepare(&self, _turn: TurnId, _tts_text: &str) {}

    /// No more sentences for `turn`. Resolves when everything queued for it has been delivered (audio:
    /// played to the end), or with [`SinkError::Interrupted`] if [`OutputSink::interrupt`] cut it short.
    fn finish_turn(&self, turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>>;

    /// Stop output now and drop everything queued.
    fn interrupt(&self);

    /// Hold the audio where it is (`true`: the user may be talking over it) or go on from there
    /// (`false`). What is queued is kept; [`OutputSink::playhead`] stays where the audio stopped, and
    /// [`OutputSink::interrupt`] ends a hold. A sink without audio ignores it.
    fn hold(&self, _held: bool) {}

    /// How much of `turn` the user has heard so far; `None` for a sink without audio (text: whatever
    /// was delivered was seen). Asked just before [`OutputSink::interrupt`].
    fn playhead(&self, _turn: TurnId) -> Option<Playhead> {
        None
    }

    /// Whether the user hears the answer (then history keeps only what was heard of an interrupted
    /// one). A text sink delivers everything at once.
    fn plays_audio(&self) -> bool {
        false
    }

    /// The session switched character: speak with `profile`'s voice from the next sentence on. Called
    /// between turns. Sinks without a voice ignore it; on error the previous voice stays.
    fn switch_voice(&self, _profile: &Profile) -> BoxFuture<'static, Result<(), SinkError>> {
        Box::pin(async { Ok(()) })
    }
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
