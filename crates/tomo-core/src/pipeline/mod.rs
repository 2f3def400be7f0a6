//! The token pipeline: composable, synchronous, push-based stages over [`PipelineItem`].
//!
//! Text deltas from the LLM go in; [`Sentence`]s come out. Structured items (tool-call events and anything
//! else a stage does not own) pass every stage untouched and in order. Stages are synchronous on purpose:
//! they are pure text transforms, so the async plumbing lives in one place (the session) and each stage is
//! trivially testable and cheap per token.
//!
//! Order of stages: [`divider::SentenceDivider`] → [`actions::ActionExtractor`] →
//! [`display::DisplayProcessor`] → [`tts_filter::TtsFilter`].

pub mod actions;
pub mod display;
pub mod divider;
pub mod tts_filter;

use crate::protocol::{Action, Sentence, ToolCallEvent};

/// A sentence on its way through the stages, before it becomes a [`Sentence`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SentenceDraft {
    /// The sentence exactly as the model wrote it (after division).
    pub raw: String,
    /// Text to display; starts as `raw`, stages strip tags from it.
    pub display_text: String,
    /// Text to speak; starts as `raw`, stages strip what should not be spoken.
    pub tts_text: String,
    pub actions: Vec<Action>,
}

/// Items flowing through the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub enum PipelineItem {
    /// A raw text delta from the model (input of the divider).
    Text(String),
    /// A divided sentence being processed by the later stages.
    Draft(SentenceDraft),
    /// A finished sentence (output of the TTS filter).
    Sentence(Sentence),
    /// A structured event that every stage passes through untouched.
    ToolCall(ToolCallEvent),
}

/// One pipeline stage. Implementations must forward every item they do not transform, in order.
pub trait Stage: Send {
    /// Process one item, appending zero or more items to `out`.
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>);
    /// End of the stream: flush anything buffered into `out`.
    fn finish(&mut self, out: &mut Vec<PipelineItem>);
}
