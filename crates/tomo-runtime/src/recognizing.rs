//! Lets the end-of-turn model wait for a running recognition. Both want the two cores at the same
//! moment: the pause's recognition starts at its first silent frame, and the model is asked a little
//! later (288 ms into the silence; 200 ms when this was measured), while whisper is still at work. ggml's threads wait for each other at every step, so losing a
//! core to the model for ~20 ms cost whisper 40-70 ms (device benchmark: transcript p50 315-357 ms after the
//! last word with the model asked beside it, ≈ 280 ms with the model asked after it). The answer waits for
//! the transcript anyway (the request goes out on the pause's words, before the end of the turn is
//! decided), so the model can wait for it at no cost: it is asked about the same audio, a little later.
//! Any recognition counts, the previous turn's too: its words go to the session first anyway. Meanwhile the
//! listening thread waits with it: frames queue (64 of them, 2 s, against a wait of at most
//! [`AfterRecognition::CAP`]), and a resumption or a cut-in is heard when they are read, right after.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tomo_audio::{EndOfTurn, TurnError};
use tomo_speech::asr::Transcript;

use crate::turn_words::{weigh, words_end};

/// How many recognitions are running, for whoever wants to wait until none is, and the words of the
/// latest pause.
#[derive(Debug, Clone, Default)]
pub struct Recognizing(Arc<Count>);

#[derive(Debug, Default)]
struct Count {
    running: Mutex<u32>,
    /// Signalled when the count falls to zero.
    ended: Condvar,
    pause_words: Mutex<Option<PauseWords>>,
}

/// What the recognizer heard up to a pause.
#[derive(Debug)]
struct PauseWords {
    /// The count of times the speaker went on (`AsrJobs::speech_went_on`) when the pause was offered.
    went_on_at: u64,
    heard: Transcript,
}

/// A recognition in progress; it ends when this is dropped.
#[must_use = "the recognition counts as running until this is dropped"]
pub struct Running(Recognizing);

impl Recognizing {
    fn count(&self) -> std::sync::MutexGuard<'_, u32> {
        self.0
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A recognition starts; it runs until the returned guard is dropped.
    pub fn begin(&self) -> Running {
        *self.count() += 1;
        Running(self.clone())
    }

    fn pause_slot(&self) -> std::sync::MutexGuard<'_, Option<PauseWords>> {
        self.0
            .pause_words
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The words of the utterance up to a pause offered when the speaker had gone on `went_on_at` times.
    pub fn heard_in_pause(&self, went_on_at: u64, heard: &Transcript) {
        *self.pause_slot() = Some(PauseWords {
            went_on_at,
            heard: heard.clone(),
        });
    }

    /// The utterance ended, or a newer pause is being recognised: the words heard are no longer its.
    pub fn forget_pause(&self) {
        *self.pause_slot() = None;
    }

    /// The words of the current pause: heard, and the speaker has not gone on since (`went_on` is the
    /// count now).
    pub(crate) fn words_of_this_pause(&self, went_on: u64) -> Option<Transcript> {
        self.pause_slot()
            .as_ref()
            .filter(|words| words.went_on_at == went_on)
            .map(|words| words.heard.clone())
    }

    /// Whether a recognition is running now.
    #[cfg(test)]
    pub fn is_running(&self) -> bool {
        *self.count() > 0
    }

    /// Waits until no recognition runs, or `cap` has passed; returns whether none runs.
    pub fn wait_idle(&self, cap: Duration) -> bool {
        let deadline = Instant::now() + cap;
        let mut running = self.count();
        while *running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            running = self
                .0
                .ended
                .wait_timeout(running, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = self.0.count();
        *running = running.saturating_sub(1);
        if *running == 0 {
            self.0.0.ended.notify_all();
        }
    }
}

/// The end-of-turn model, asked once the running recognition is done (or after `cap`, so a long
/// recognition of a long utterance cannot hold the decision, and the microphone's frames, for long:
/// they queue meanwhile and are heard right after). Its answer is weighed with how the pause's words end
/// (`turn_words.rs`), when they are the current pause's.
pub struct AfterRecognition {
    model: Box<dyn EndOfTurn + Send>,
    recognizing: Recognizing,
    /// How many times the speaker went on after a pause (the recognizer's count).
    went_on: Arc<AtomicU64>,
    cap: Duration,
}

impl AfterRecognition {
    /// Recognition of a 3 s question takes ≈ 250 ms here, from the pause's first silent frame: the
    /// model, asked at 288 ms, waits for it at most this long. Frames queued meanwhile are read later than
    /// they arrived, and the next decision does not count that: it stays honest while the first ask plus
    /// this cap ends before the longest silence (288 + 500 < 960 ms; a test holds it).
    pub const CAP: Duration = Duration::from_millis(500);

    pub fn new(
        model: Box<dyn EndOfTurn + Send>,
        recognizing: Recognizing,
        went_on: Arc<AtomicU64>,
        cap: Duration,
    ) -> Self {
        Self {
            model,
            recognizing,
            went_on,
            cap,
        }
    }
}

impl EndOfTurn for AfterRecognition {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        let began = Instant::now();
        let idle = self.recognizing.wait_idle(self.cap);
        let waited_ms = began.elapsed().as_millis() as u64;
        if idle {
            tracing::debug!(waited_ms, "end-of-turn model asked after the recognition");
        } else {
            tracing::debug!(
                waited_ms,
                "recognition still running; the end-of-turn model asked beside it"
            );
        }
        let heard = self.model.probability_done(utterance)?;
        let words = self
            .recognizing
            .words_of_this_pause(self.went_on.load(Ordering::SeqCst));
        let ending = words.and_then(|heard| words_end(&heard.text, heard.language.as_deref()));
        let weighed = weigh(heard, ending);
        tracing::debug!(heard, ?ending, weighed, "end of turn from sound and words");
        Ok(weighed)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn nothing_running_waits_for_nothing() {
        let recognizing = Recognizing::default();
        assert!(!recognizing.is_running());
        assert!(recognizing.wait_idle(Duration::ZERO));
        let first = recognizing.begin();
        let second = recognizing.begin();
        drop(first);
        assert!(recognizing.is_running(), "one of two still runs");
        drop(second);
        assert!(!recognizing.is_running());
    }

    #[test]
    fn a_running_recognition_holds_the_wait_until_the_cap() {
        let recognizing = Recognizing::default();
        let _running = recognizing.begin();
        assert!(!recognizing.wait_idle(Duration::from_millis(5)));
    }

    /// Records whether a recognition was running when it was asked.
    struct Asked {
        recognizing: Recognizing,
        calls: mpsc::Sender<bool>,
    }

    impl EndOfTurn for Asked {
        fn probability_done(&mut self, _: &[f32]) -> Result<f32, TurnError> {
            self.calls.send(self.recognizing.is_running()).unwrap();
            Ok(0.95)
        }
    }

    /// The model behind [`AfterRecognition`] with `cap`, and what it says of each time it was asked.
    fn asked_after(
        recognizing: &Recognizing,
        cap: Duration,
    ) -> (AfterRecognition, mpsc::Receiver<bool>) {
        let (calls, asked) = mpsc::channel();
        let model = Asked {
            recognizing: recognizing.clone(),
            calls,
        };
        let after =
            AfterRecognition::new(Box::new(model), recognizing.clone(), Arc::default(), cap);
        (after, asked)
    }

    fn english(text: &str) -> Transcript {
        Transcript {
            text: text.to_owned(),
            language: Some("en".to_owned()),
        }
    }

    /// A model that always says `probability`.
    struct Says(f32);

    impl EndOfTurn for Says {
        fn probability_done(&mut self, _: &[f32]) -> Result<f32, TurnError> {
            Ok(self.0)
        }
    }

    fn judged(model_says: f32, recognizing: &Recognizing, went_on: &Arc<AtomicU64>) -> f32 {
        let mut after = AfterRecognition::new(
            Box::new(Says(model_says)),
            recognizing.clone(),
            Arc::clone(went_on),
            Duration::ZERO,
        );
        after.probability_done(&[0.0; 512]).unwrap()
    }

    #[test]
    fn the_pause_words_weigh_the_models_answer() {
        let recognizing = Recognizing::default();
        let went_on = Arc::new(AtomicU64::new(3));
        assert_eq!(judged(0.3, &recognizing, &went_on), 0.3, "no words yet");
        recognizing.heard_in_pause(3, &english("Tell me something nice about cats."));
        assert!(judged(0.3, &recognizing, &went_on) >= 0.9, "finished words");
        recognizing.heard_in_pause(3, &english("So yesterday I went to the..."));
        assert!(
            judged(0.97, &recognizing, &went_on) < 0.5,
            "unfinished words"
        );
    }

    #[test]
    fn words_of_an_earlier_pause_or_utterance_do_not_count() {
        let recognizing = Recognizing::default();
        let went_on = Arc::new(AtomicU64::new(0));
        recognizing.heard_in_pause(0, &english("So yesterday I went to the..."));
        went_on.fetch_add(1, Ordering::SeqCst); // the speaker went on after that pause
        assert_eq!(judged(0.97, &recognizing, &went_on), 0.97);
        recognizing.heard_in_pause(1, &english("Could you play some music?"));
        recognizing.forget_pause(); // the utterance ended
        assert_eq!(judged(0.3, &recognizing, &went_on), 0.3);
    }

    #[test]
    fn the_model_is_asked_once_the_recognition_has_ended() {
        let recognizing = Recognizing::default();
        let (mut after, asked) = asked_after(&recognizing, Duration::from_secs(5));
        let running = recognizing.begin();
        let (started_tx, started) = mpsc::channel();
        let decision = std::thread::spawn(move || {
            started_tx.send(()).unwrap();
            after.probability_done(&[0.0; 512])
        });
        started.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            asked.try_recv().is_err(),
            "asked while the recognition was running"
        );
        drop(running);
        assert_eq!(decision.join().unwrap().unwrap(), 0.95);
        assert!(!asked.recv().unwrap(), "asked beside the recognition");
    }

    #[test]
    fn past_the_cap_the_model_is_asked_anyway() {
        let recognizing = Recognizing::default();
        let (mut after, asked) = asked_after(&recognizing, Duration::from_millis(5));
        let _running = recognizing.begin();
        assert_eq!(after.probability_done(&[0.0; 512]).unwrap(), 0.95);
        assert!(
            asked.recv().unwrap(),
            "asked while the recognition still ran"
        );
    }

    #[test]
    fn the_longest_wait_ends_before_the_longest_silence() {
        let turn = crate::voice::segmenter_config().turn;
        assert!(turn.min_silence + AfterRecognition::CAP < turn.max_silence);
    }
}
