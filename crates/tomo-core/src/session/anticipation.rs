//! The coordinator's side of starting a voice turn's answer in the user's pause (`Op::SpeechPaused`):
//! the request is built as the turn would build it (request.rs) and started on the character's client,
//! which hands it to the turn if the turn's request is the same (tomo-llm's anticipate.rs).

use std::sync::Arc;

use super::{Coordinator, request};

impl Coordinator {
    /// Starts building and sending the request for `transcript`, replacing an earlier anticipation.
    pub(super) fn anticipate(&mut self, transcript: String) {
        let text = transcript.trim().to_owned();
        // A turn in flight (a pause in speech over the character's answer) or nothing said: nothing to
        // anticipate.
        if text.is_empty() || self.current.is_some() {
            return;
        }
        self.drop_anticipation();
        let character = Arc::clone(&self.character);
        self.anticipation = Some(tokio::spawn(request::anticipate(character, text)));
    }

    /// Stops building an anticipation; one already started stays for the turn.
    pub(super) fn stop_anticipating(&mut self) {
        if let Some(building) = self.anticipation.take() {
            building.abort();
        }
    }

    /// Drops the anticipation altogether (the user went on, typed, or the character changed).
    pub(super) fn drop_anticipation(&mut self) {
        self.stop_anticipating();
        self.character.client.cancel_anticipation();
    }
}
