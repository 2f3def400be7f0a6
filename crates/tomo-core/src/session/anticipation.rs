//! The coordinator's side of starting a voice turn's answer in the user's pause (`Op::SpeechPaused`):
//! the request is built as the turn would build it (request.rs) and started on the character's client,
//! which hands it to the turn if the turn's request is the same (tomo-llm's anticipate.rs). The turn also
//! takes the hooks' blocks the pause got, so the hooks run once per request. And the end of the
//! utterance (`Op::SpeechEnded`), which starts that turn.

use std::sync::Arc;
use std::time::Duration;

use tomo_protocol::{Event, SessionState};

use super::Coordinator;
use super::request::{self, BeforeTurn};

impl Coordinator {
    /// Starts building and sending the request for `transcript`, replacing an earlier anticipation.
    pub(super) async fn anticipate(&mut self, transcript: String) {
        let text = transcript.trim().to_owned();
        // A turn in flight (a pause in speech over the character's answer) or nothing said: nothing to
        // anticipate.
        if text.is_empty() || self.current.is_some() {
            return;
        }
        self.drop_anticipation().await;
        let character = Arc::clone(&self.character);
        self.anticipation = Some(tokio::spawn(request::anticipate(character, text)));
    }

    /// For the turn ending on `text`: the hooks' blocks of its pause when the pause had these words and
    /// its request is already started (the turn's identical request takes it over). Anything else is
    /// dropped, and the turn builds its request afresh.
    pub(super) async fn take_anticipation(&mut self, text: &str) -> Option<BeforeTurn> {
        let building = self.anticipation.take()?;
        if building.is_finished()
            && let Ok(anticipated) = building.await
            && anticipated.user_text == text
            && anticipated.turn_id == self.character.next_turn_id()
        {
            return Some(anticipated.before_turn);
        }
        self.drop_anticipation().await;
        None
    }

    /// Drops the anticipation altogether (the user went on, typed, or the character changed). Waits
    /// for a request still being built, so it cannot start after this.
    pub(super) async fn drop_anticipation(&mut self) {
        if let Some(building) = self.anticipation.take() {
            building.abort();
            let _ = building.await;
        }
        self.character.client.cancel_anticipation();
    }

    /// The user stopped speaking and these are the words (`speech_ended`); `waited`: how long the end
    /// of the turn took to decide after the last word, and recognition after that.
    pub(super) async fn speech_ended(
        &mut self,
        text: &str,
        waited: (Duration, Duration),
        over_answer_only: bool,
    ) {
        // Said over the answer and not meant to stop it: no turn, nor its request.
        let dropped = self.judge_talk_over(text, true, over_answer_only).await == Some(false);
        if dropped {
            self.drop_anticipation().await;
        }
        // The request started in the pause, if it was for these words.
        let before_turn = self.take_anticipation(text).await;
        // Noise or a cough: no turn.
        if dropped || text.is_empty() {
            if self.state.state() == SessionState::Listening {
                self.transition(SessionState::Idle);
            }
            return;
        }
        self.stop_current_turn().await;
        self.emit(Event::UserTranscript {
            text: text.to_owned(),
        });
        self.start_turn(text.to_owned(), None, Some(waited), before_turn);
    }
}
