//! The token pipeline: composable, synchronous, push-based stages over [`PipelineItem`].
//!
//! Text deltas from the LLM go in; [`Sentence`]s come out. Structured items (tool-call events and anything
//! else a stage does not own) pass every stage untouched and in order. Stages are synchronous on purpose:
//! they are pure text transforms, so the async plumbing lives in one place (the session) and each stage is
//! trivially testable and cheap per token.
//!
//! Order of stages: [`divider::SentenceDivider`] → [`actions::ActionExtractor`] →
//! [`display::DisplayProcessor`] → [`narration::NarrationFilter`] → [`tts_filter::TtsFilter`].

pub mod actions;
pub mod display;
pub mod divider;
pub mod narration;
pub mod tts_filter;

use tomo_plugin_api::TagSpec;
use tomo_protocol::{Action, DisplaySpan, Sentence, ToolCallEvent};

pub use actions::ActionExtractor;
pub use display::DisplayProcessor;
pub use divider::SentenceDivider;
pub use narration::NarrationFilter;
pub use tts_filter::{TtsFilter, speakable};

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
    /// Set by the narration stage when the display text has narration or emphasis.
    pub display_spans: Vec<DisplaySpan>,
}

impl SentenceDraft {
    /// A freshly divided sentence: raw, display and spoken text all start as `text`.
    pub fn new(text: &str) -> Self {
        Self {
            raw: text.to_owned(),
            display_text: text.to_owned(),
            tts_text: text.to_owned(),
            actions: Vec::new(),
            display_spans: Vec::new(),
        }
    }
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

/// What comes out of a [`Pipeline`]: finished sentences and the structured events that passed through.
#[derive(Debug, Clone, PartialEq)]
pub enum PipelineOutput {
    Sentence(Sentence),
    ToolCall(ToolCallEvent),
}

impl From<PipelineOutput> for PipelineItem {
    fn from(output: PipelineOutput) -> Self {
        match output {
            PipelineOutput::Sentence(sentence) => Self::Sentence(sentence),
            PipelineOutput::ToolCall(call) => Self::ToolCall(call),
        }
    }
}

/// One pipeline stage. Implementations must forward every item they do not transform, in order.
pub trait Stage: Send {
    /// Process one item, appending zero or more items to `out`.
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>);
    /// End of the stream: flush anything buffered into `out`.
    fn finish(&mut self, out: &mut Vec<PipelineItem>);
}

/// What a [`Pipeline`] needs from the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineSettings {
    /// Emotion names (keys of the profile's emotion map); `[name]` tags in the text become actions.
    pub emotions: Vec<String>,
    /// `[key:value]` tags the character's plugins read (e.g. `[mood:+10]`); they become actions too.
    pub tags: Vec<TagSpec>,
    /// Show `<think>` content in `display_text` (it is never spoken).
    pub show_think: bool,
    /// Cut the turn's first sentence at its first comma once it has a few words, so TTS starts early.
    pub first_clause_fast_path: bool,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        Self {
            emotions: Vec::new(),
            tags: Vec::new(),
            show_think: false,
            first_clause_fast_path: true,
        }
    }
}

/// The five stages chained: text deltas and tool events in, [`Sentence`]s and tool events out, in order.
///
/// Create one per turn: sentence indices count from 0 per instance. [`Pipeline::finish`] flushes and
/// resets the stages (so the first-clause fast path re-arms) but does not restart the numbering.
#[derive(Debug, Clone)]
pub struct Pipeline {
    divider: SentenceDivider,
    actions: ActionExtractor,
    display: DisplayProcessor,
    narration: NarrationFilter,
    tts: TtsFilter,
    next_index: u32,
}

impl Pipeline {
    pub fn new(settings: &PipelineSettings) -> Self {
        Self {
            divider: SentenceDivider::new(settings.first_clause_fast_path),
            actions: ActionExtractor::new(&settings.emotions, &settings.tags),
            display: DisplayProcessor::new(settings.show_think),
            narration: NarrationFilter::new(),
            tts: TtsFilter::new(),
            next_index: 0,
        }
    }

    /// Push one item through all stages; returns what is finished.
    pub fn push(&mut self, item: PipelineItem) -> Vec<PipelineOutput> {
        let mut items = Vec::new();
        self.divider.push(item, &mut items);
        if items.is_empty() {
            // The common case per token: the divider is still collecting the sentence.
            return Vec::new();
        }
        self.after_divider(items, false)
    }

    /// End of turn: flush everything.
    pub fn finish(&mut self) -> Vec<PipelineOutput> {
        let mut items = Vec::new();
        self.divider.finish(&mut items);
        self.after_divider(items, true)
    }

    /// The next sentence as it would come out if the model's text ended here, when the text stops at a
    /// sentence end that only the next delta can confirm (see [`SentenceDivider::sentence_if_ended`]).
    /// Nothing changes in the pipeline: a sink may start synthesizing it while the model goes on.
    pub fn sentence_if_ended(&self) -> Option<Sentence> {
        let draft = self.divider.sentence_if_ended()?;
        let mut probe = self.clone();
        probe
            .after_divider(vec![PipelineItem::Draft(draft)], false)
            .into_iter()
            .find_map(|output| match output {
                PipelineOutput::Sentence(sentence) => Some(sentence),
                PipelineOutput::ToolCall(_) => None,
            })
    }

    /// The stages after the divider, in order (each finished after its items if `finish`), then
    /// numbering.
    fn after_divider(&mut self, items: Vec<PipelineItem>, finish: bool) -> Vec<PipelineOutput> {
        let items = feed(&mut self.actions, items, finish);
        let items = feed(&mut self.display, items, finish);
        let items = feed(&mut self.narration, items, finish);
        let items = feed(&mut self.tts, items, finish);
        self.number(items)
    }

    /// Numbers sentences in output order. The TTS filter numbers its own too; renumbering here also
    /// covers ready-made sentences pushed in by the caller.
    fn number(&mut self, items: Vec<PipelineItem>) -> Vec<PipelineOutput> {
        items
            .into_iter()
            .filter_map(|item| match item {
                PipelineItem::Sentence(mut sentence) => {
                    sentence.index = self.next_index;
                    self.next_index += 1;
                    Some(PipelineOutput::Sentence(sentence))
                }
                PipelineItem::ToolCall(call) => Some(PipelineOutput::ToolCall(call)),
                // Every stage turns text into drafts and drafts into sentences; nothing else is left.
                PipelineItem::Text(_) | PipelineItem::Draft(_) => None,
            })
            .collect()
    }
}

/// Runs `items` through `stage`, then finishes it if `finish`.
fn feed(stage: &mut dyn Stage, items: Vec<PipelineItem>, finish: bool) -> Vec<PipelineItem> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        stage.push(item, &mut out);
    }
    if finish {
        stage.finish(&mut out);
    }
    out
}

#[cfg(test)]
mod tests;
