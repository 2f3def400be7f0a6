//! A voice front end's side of a session, for the tests: the speech ops, and speakers that are still
//! playing the answer (at a playhead the test sets) until the test lets them drain.

use std::sync::Mutex;

use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tomo_core::sink::{OutputSink, Playhead, SinkError};
use tomo_protocol::{Op, Sentence, TurnId};

pub fn paused(words: &str) -> Op {
    Op::SpeechPaused {
        transcript: words.to_owned(),
    }
}

pub fn ended(words: &str) -> Op {
    Op::SpeechEnded {
        transcript: words.to_owned(),
        asr_ms: 100,
        end_of_turn_ms: 1_000,
        over_answer_only: false,
    }
}

/// Speakers in the middle of the answer: they keep the sentences and every hold, report the playhead
/// the test sets, and play to the end when told.
#[derive(Default)]
pub struct Speakers {
    pub playhead: Mutex<Option<Playhead>>,
    pub sentences: Mutex<Vec<Sentence>>,
    pub holds: Mutex<Vec<bool>>,
    pub pending: Mutex<Option<oneshot::Sender<Result<(), SinkError>>>>,
}

impl Speakers {
    pub fn holds(&self) -> Vec<bool> {
        self.holds.lock().unwrap().clone()
    }

    pub fn play_to_the_end(&self) {
        let done = self.pending.lock().unwrap().take().expect("a turn waits");
        done.send(Ok(())).unwrap();
    }
}

impl OutputSink for Speakers {
    fn enqueue(&self, _turn: TurnId, sentence: Sentence) -> Result<(), SinkError> {
        self.sentences.lock().unwrap().push(sentence);
        Ok(())
    }

    fn finish_turn(&self, _turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>> {
        let (done, wait) = oneshot::channel();
        *self.pending.lock().unwrap() = Some(done);
        Box::pin(async move { wait.await.unwrap_or(Err(SinkError::Interrupted)) })
    }

    fn interrupt(&self) {
        if let Some(done) = self.pending.lock().unwrap().take() {
            let _ = done.send(Err(SinkError::Interrupted));
        }
    }

    fn hold(&self, held: bool) {
        self.holds.lock().unwrap().push(held);
    }

    fn playhead(&self, _turn: TurnId) -> Option<Playhead> {
        *self.playhead.lock().unwrap()
    }

    fn plays_audio(&self) -> bool {
        true
    }
}
