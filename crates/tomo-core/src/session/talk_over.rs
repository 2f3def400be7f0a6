//! Speech over the character's answer (`Op::SpeechOverAnswer`). The voice front end sends it when its
//! barge-in gate hears enough speech under the character's voice; the answer's audio stops at once
//! (within the device's buffer), which is what the user feels as "it let me speak". Whether it stays
//! stopped is decided by the words of the same utterance, as soon as the recogniser has them (the
//! pause's `speech_paused`, else the final `speech_ended`): real words interrupt the turn, history
//! keeping what was heard up to the stop; nothing recognisable, a listening sound or acknowledgement, or
//! the character's own words (what the echo canceller let through of its voice) let the answer go on
//! where it stopped. So a cough, an "mm-hm" or the character hearing itself costs a short gap instead
//! of the answer.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;
use tomo_protocol::{Event, ResumeReason, SessionState, TurnId};

use super::Coordinator;
use super::verdict::{Judging, Verdict, verdict};
use crate::sink::Playhead;

/// The longest an answer waits for the words of the speech over it; after this it goes on. The words
/// normally decide within a second of the speaker pausing, so this only covers a recogniser that never
/// answered.
const MAX_HOLD: Duration = Duration::from_secs(15);
/// How many of the character's latest sentences are remembered (a few answers' worth).
const OWN_SENTENCES: usize = 64;

/// Utterances that began under the character's voice whose final words are not judged yet. The
/// listener announces each once (`speech_over_answer`, from its own thread) and the recogniser sends
/// their words in order (`speech_paused`, `speech_ended`, from another): a second utterance can be
/// announced before the first one's final words arrive, so they are counted, not assumed to be one.
#[derive(Debug)]
pub(super) struct TalkOver {
    /// The answer whose audio is held, if one was playing.
    turn: Option<TurnId>,
    /// The audio is held now (until a verdict to go on).
    held: bool,
    /// Why the answer went on after the latest pause's words: the final words are judged again.
    went_on: Option<ResumeReason>,
    /// Utterances announced whose `speech_ended` has not come.
    open: usize,
    /// When a hold that no words decided ends.
    deadline: Instant,
}

impl TalkOver {
    /// When the coordinator must let a held answer go on by itself.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.held.then_some(self.deadline)
    }
}

/// The character's latest sentences, (turn, index, spoken text): what its echo can sound like. Its
/// echo is what is playing, which can be far behind what the model has written, so the sentences
/// around the playhead are looked at, not the newest.
#[derive(Debug, Default)]
pub(super) struct OwnSpeech(VecDeque<(TurnId, u32, String)>);

impl OwnSpeech {
    pub(super) fn record(&mut self, event: &Event) {
        if let Event::Sentence { turn_id, sentence } = event
            && let Some(spoken) = &sentence.tts_text
        {
            if self.0.len() == OWN_SENTENCES {
                self.0.pop_front();
            }
            self.0.push_back((*turn_id, sentence.index, spoken.clone()));
        }
    }

    /// The sentences of `turn` from the one before the playhead's to the one after it; without a turn
    /// or a playhead (the answer just ended: its tail is in the room), the last three recorded.
    fn around(&self, playing: Option<(TurnId, Playhead)>) -> Vec<String> {
        match playing {
            Some((turn, playhead)) => self
                .0
                .iter()
                .filter(|(t, index, _)| {
                    *t == turn
                        && (playhead.sentence.saturating_sub(1)..=playhead.sentence + 1)
                            .contains(index)
                })
                .map(|(.., text)| text.clone())
                .collect(),
            None => self
                .0
                .iter()
                .rev()
                .take(3)
                .map(|(.., text)| text.clone())
                .collect(),
        }
    }
}

impl Coordinator {
    /// `speech_over_answer`: hold the answer in flight (if any) until the words decide.
    pub(super) fn speech_over_answer(&mut self) {
        let current = self.current.as_ref().map(|active| active.id);
        let talk_over = self.talk_over.get_or_insert(TalkOver {
            turn: None,
            held: false,
            went_on: None,
            open: 0,
            deadline: Instant::now(),
        });
        talk_over.open += 1;
        talk_over.went_on = None;
        talk_over.turn = current;
        self.hold_answer();
    }

    /// Holds the current answer's audio (again) for speech over it.
    fn hold_answer(&mut self) {
        let Some(talk_over) = self.talk_over.as_mut() else {
            return;
        };
        talk_over.deadline = Instant::now() + MAX_HOLD;
        if talk_over.held {
            return;
        }
        if let Some(turn_id) = talk_over.turn {
            talk_over.held = true;
            self.sink.hold(true);
            self.emit(Event::AnswerHeld { turn_id });
        }
    }

    /// The words of an utterance over the answer, if one is being judged: `Some(true)` when they stop
    /// the answer (it has been interrupted, and the words go on as an ordinary utterance), `Some(false)`
    /// when the answer goes on and the words are dropped. `None`: no speech over an answer. `last`: the
    /// utterance ended with these words (`speech_ended`).
    /// `over_answer_only`: the utterance stopped when the character went quiet.
    pub(super) async fn judge_talk_over(
        &mut self,
        transcript: &str,
        last: bool,
        over_answer_only: bool,
    ) -> Option<bool> {
        let playing = self
            .talk_over
            .as_ref()?
            .turn
            .and_then(|turn| Some((turn, self.sink.playhead(turn)?)));
        let own_speech = self.own_speech.around(playing);
        let talk_over = self.talk_over.as_mut()?;
        let judging = Judging {
            own_speech: &own_speech,
            min_words: self.character.profile.asr.interrupt_min_words as usize,
            over_answer_only,
        };
        let decided = verdict(transcript, &judging);
        tracing::debug!(%transcript, ?decided, last, "words over the answer");
        if last {
            talk_over.open = talk_over.open.saturating_sub(1);
        }
        match decided {
            Verdict::Yield => {
                let held = talk_over.held;
                self.talk_over = None;
                // The user wins: the turn stops where its audio was held.
                self.drop_anticipation().await;
                self.stop_current_turn().await;
                if held {
                    // A turn that had played everything stops without touching the output: the
                    // hold must not outlive it.
                    self.sink.interrupt();
                }
                if self.state.state() == SessionState::Idle {
                    self.transition(SessionState::Listening);
                }
                Some(true)
            }
            Verdict::GoOn(why) => {
                // A later utterance over the answer holds it for its own words.
                let others = talk_over.open > 0 && last;
                let release = talk_over.held && !others;
                talk_over.went_on = Some(why);
                if release {
                    talk_over.held = false;
                }
                let turn = talk_over.turn;
                if talk_over.open == 0 {
                    self.talk_over = None;
                }
                if release {
                    self.release_hold(why, turn);
                }
                Some(false)
            }
        }
    }

    /// The speaker went on after a pause whose words let the answer go on: if those were a listening
    /// sound, the user is now saying more (hold again); if they were the character's own voice or
    /// nothing, the same utterance is more of it (the final words decide).
    pub(super) fn talk_over_went_on(&mut self) {
        let current = self.current.as_ref().map(|active| active.id);
        if let Some(talk_over) = self.talk_over.as_mut()
            && talk_over.went_on == Some(ResumeReason::Backchannel)
            && talk_over.turn.is_some()
            && talk_over.turn == current
        {
            talk_over.went_on = None;
            self.hold_answer();
        }
    }

    /// No words decided the hold in time: the answer goes on (the words may still stop it later).
    pub(super) fn hold_timed_out(&mut self) {
        let Some(talk_over) = self.talk_over.as_mut().filter(|t| t.held) else {
            return;
        };
        talk_over.held = false;
        talk_over.went_on = Some(ResumeReason::TimedOut);
        let turn = talk_over.turn;
        self.release_hold(ResumeReason::TimedOut, turn);
    }

    fn release_hold(&mut self, why: ResumeReason, turn: Option<TurnId>) {
        self.sink.hold(false);
        let current = self.current.as_ref().map(|active| active.id);
        if let Some(turn_id) = turn.filter(|id| Some(*id) == current) {
            tracing::debug!(?why, turn_id, "the answer goes on");
            self.emit(Event::AnswerResumed { turn_id, why });
        }
    }

    /// The answer the speech was over is gone (the user typed or spoke to the idle character, a new
    /// turn or character starts): nothing stays held for the next answer. The utterances still open
    /// are judged when their words come, so an echo of the old answer cannot become a turn.
    pub(super) fn detach_talk_over(&mut self) {
        if let Some(talk_over) = self.talk_over.as_mut() {
            talk_over.turn = None;
            if talk_over.held {
                talk_over.held = false;
                self.sink.hold(false);
            }
        }
    }

    /// The held turn ended by itself (its audio had all been handed over when the speech came): the
    /// words are still judged, but nothing is held any more.
    pub(super) fn talk_over_turn_done(&mut self, turn_id: TurnId) {
        if self
            .talk_over
            .as_ref()
            .is_some_and(|talk_over| talk_over.turn == Some(turn_id))
        {
            self.detach_talk_over();
        }
    }
}

/// Resolves at `deadline`, never without one (so a `select!` branch without a hold is off).
pub(super) async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
