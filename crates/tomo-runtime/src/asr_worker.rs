//! Speech recognition on its own thread, so capture never waits for ASR. Utterances come in two kinds:
//! a speculative snapshot taken when the speaker paused, and the final segment once the end of the turn
//! is decided. When the final segment holds the same words as the last snapshot (same start, same end of
//! speech, and the speaker did not go on in between), the snapshot's transcript is used and the user waits
//! only for what is left of it. When the speaker goes on after the pause ([`AsrJobs::speech_went_on`]),
//! the snapshot's recognition is not started, or stops at whisper's next check (after the encoder, after
//! each decoder pass), and its words are not offered to the session.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SendError, Sender, channel};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tomo_audio::SpeechSegment;
use tomo_protocol::Op;
use tomo_speech::asr::{AsrError, SpeechToText, Stale};

use crate::notices::{Notice, Notify};
use crate::recognizing::{AfterRecognition, Recognizing};

/// Work for the recognizer.
#[derive(Debug)]
pub enum AsrJob {
    /// The speaker paused: transcribe what was said so far, in case the turn ends here. `went_on_at`:
    /// [`AsrJobs::speech_went_on`]'s count when the pause was heard.
    Speculate {
        snapshot: SpeechSegment,
        went_on_at: u64,
    },
    /// The turn ended `end_of_turn` after the last word, at `decided`: its transcript goes to the session.
    /// `over_answer_only`: speech over the character's answer that stopped when it went quiet.
    Final {
        segment: SpeechSegment,
        end_of_turn: Duration,
        decided: Instant,
        over_answer_only: bool,
    },
}

/// A transcript of a pause snapshot, keyed by what it holds.
struct Speculation {
    start: Duration,
    speech_end: Duration,
    /// [`AsrJobs::speech_went_on`]'s count when the snapshot was taken.
    went_on_at: u64,
    text: Result<String, AsrError>,
}

impl Speculation {
    /// The final segment holds the snapshot's words: the same utterance, ending at the same speech, and
    /// the speaker did not go on since.
    fn matches(&self, segment: &SpeechSegment, went_on: u64) -> bool {
        self.start == segment.start
            && self.speech_end == segment.speech_end
            && self.went_on_at == went_on
    }
}

/// The recognizer thread's inbox.
pub struct AsrJobs {
    jobs: Sender<AsrJob>,
    /// Counts the times the speaker went on after a pause; a snapshot's recognition started at another
    /// count is stale.
    went_on: Arc<AtomicU64>,
    recognizing: Recognizing,
}

impl AsrJobs {
    /// The end-of-turn `model`, asked once the recognition of the pause is done and weighed with its
    /// words.
    pub fn end_of_turn(&self, model: Box<dyn tomo_audio::EndOfTurn + Send>) -> AfterRecognition {
        AfterRecognition::new(
            model,
            self.recognizing.clone(),
            Arc::clone(&self.went_on),
            AfterRecognition::CAP,
        )
    }

    pub fn send(&self, job: AsrJob) -> Result<(), SendError<AsrJob>> {
        self.jobs.send(job)
    }

    /// Offers the pause's `snapshot`, stamped with the count of times the speaker went on so far (read
    /// here, on the thread that counts them, so the worker cannot stamp it late).
    pub fn speculate(&self, snapshot: SpeechSegment) -> Result<(), SendError<AsrJob>> {
        let went_on_at = self.went_on.load(Ordering::SeqCst);
        self.jobs.send(AsrJob::Speculate {
            snapshot,
            went_on_at,
        })
    }

    /// A new utterance began: the words of the last one's pauses are not its.
    pub fn speech_started(&self) {
        self.recognizing.forget_pause();
    }

    /// The speaker went on after the pause: the snapshot being recognised (if any) is stale.
    pub fn speech_went_on(&self) {
        self.went_on.fetch_add(1, Ordering::SeqCst);
    }
}

/// Starts the recognizer thread; it ends when the job sender or the session goes away. No warm-up decode:
/// whisper's state is allocated when the model loads, the first utterance measured as fast as the others
/// on the device benchmark, and a decode at start (≈ 1.6 s of both cores; the older "warm-up" was silence,
/// which returns before decoding) slowed the desktop app's start and profile switches.
pub fn spawn_asr(asr: Arc<dyn SpeechToText>, ops: mpsc::Sender<Op>, notify: Notify) -> AsrJobs {
    let (jobs, rx) = channel();
    let went_on = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&went_on);
    let recognizing = Recognizing::default();
    let running = recognizing.clone();
    let spawned = thread::Builder::new()
        .name("tomo-asr".into())
        .spawn(move || {
            serve(&*asr, &rx, &counter, &running, &ops, &*notify);
        });
    if let Err(error) = spawned {
        // The job sender then reports every utterance as dropped (`listen` logs it).
        tracing::error!(%error, "cannot start the speech recognizer thread");
    }
    AsrJobs {
        jobs,
        went_on,
        recognizing,
    }
}

fn serve(
    asr: &dyn SpeechToText,
    jobs: &Receiver<AsrJob>,
    went_on: &Arc<AtomicU64>,
    recognizing: &Recognizing,
    ops: &mpsc::Sender<Op>,
    notify: &(dyn Fn(Notice) + Send + Sync),
) {
    let mut queue: VecDeque<AsrJob> = VecDeque::new();
    let mut speculation: Option<Speculation> = None;
    loop {
        if queue.is_empty() {
            match jobs.recv() {
                Ok(job) => queue.push_back(job),
                Err(_) => return,
            }
        }
        queue.extend(jobs.try_iter());
        let Some(job) = queue.pop_front() else {
            continue;
        };
        match job {
            AsrJob::Speculate {
                snapshot,
                went_on_at: at,
            } => {
                let counter = Arc::clone(went_on);
                let stale: Stale = Arc::new(move || counter.load(Ordering::SeqCst) != at);
                recognizing.forget_pause();
                // Anything newer already queued, or the speaker already went on: skip it.
                if !queue.is_empty() || stale() {
                    speculation = None;
                    continue;
                }
                let began = Instant::now();
                // Counted as running for the decode only: a guard alive across the sends below would
                // make the end-of-turn model wait on the session too.
                let recognized = {
                    let _running = recognizing.begin();
                    let recognized = asr.transcribe_unless(&snapshot.samples, &stale);
                    // Kept before the guard drops: the end-of-turn model reads them as soon as no
                    // recognition runs.
                    if let Ok(transcript) = &recognized {
                        recognizing.heard_in_pause(at, transcript);
                    }
                    recognized
                };
                let text = match recognized {
                    Err(AsrError::GivenUp) => {
                        tracing::debug!("the speaker went on; the pause's recognition stopped");
                        speculation = None;
                        continue;
                    }
                    other => other.map(|t| t.text),
                };
                tracing::debug!(
                    took_ms = began.elapsed().as_millis() as u64,
                    samples = snapshot.samples.len(),
                    "pause recognised"
                );
                // The session may start the answer for these words while the end of the turn is
                // still being decided (unless newer audio already made them stale). No words are said
                // too: speech over the character's answer that was only a cough lets it go on at once.
                queue.extend(jobs.try_iter());
                if let Ok(words) = &text
                    && queue.is_empty()
                {
                    let op = Op::SpeechPaused {
                        transcript: words.clone(),
                    };
                    if ops.blocking_send(op).is_err() {
                        return;
                    }
                    // The speaker went on while the op was on its way: `listen`'s `speech_resumed` may
                    // have reached the session before it, so say it again after it.
                    if stale() && ops.blocking_send(Op::SpeechResumed).is_err() {
                        return;
                    }
                }
                speculation = Some(Speculation {
                    start: snapshot.start,
                    speech_end: snapshot.speech_end,
                    went_on_at: at,
                    text,
                });
            }
            AsrJob::Final {
                segment,
                end_of_turn,
                decided,
                over_answer_only,
            } => {
                recognizing.forget_pause();
                let now = went_on.load(Ordering::SeqCst);
                let reused = speculation.take().filter(|s| s.matches(&segment, now));
                let text = match reused {
                    Some(spoken) => {
                        tracing::debug!("the transcript of the pause is the turn's");
                        spoken.text
                    }
                    // Too short to hold words (the listener says so): nothing to recognise.
                    None if segment.samples.is_empty() => Ok(String::new()),
                    None => {
                        let _running = recognizing.begin();
                        asr.transcribe(&segment.samples).map(|t| t.text)
                    }
                };
                let transcript = text.unwrap_or_else(|error| {
                    notify(Notice::warning(format!(
                        "speech recognition failed: {error}"
                    )));
                    String::new()
                });
                let op = Op::SpeechEnded {
                    transcript,
                    asr_ms: decided.elapsed().as_millis() as u64,
                    end_of_turn_ms: end_of_turn.as_millis() as u64,
                    over_answer_only,
                };
                if ops.blocking_send(op).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::sync::Mutex;
    use tomo_audio::TurnEnd;
    use tomo_speech::asr::Transcript;

    /// Says how many samples it was given; records every call.
    #[derive(Default)]
    struct Counting(Mutex<Vec<usize>>);

    impl SpeechToText for Counting {
        fn name(&self) -> &str {
            "counting"
        }

        fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError> {
            self.0.lock().unwrap().push(samples.len());
            Ok(Transcript {
                text: format!("{} samples", samples.len()),
                ..Transcript::default()
            })
        }
    }

    fn segment(samples: usize, speech_end_ms: u64, ended_by: TurnEnd) -> SpeechSegment {
        SpeechSegment {
            samples: vec![0.0; samples],
            start: Duration::ZERO,
            end: Duration::from_millis(speech_end_ms + 100),
            speech_end: Duration::from_millis(speech_end_ms),
            ended_by,
        }
    }

    fn run(jobs: Vec<AsrJob>) -> (Vec<usize>, Vec<Op>) {
        let asr = Counting::default();
        let (tx, rx) = channel();
        for job in jobs {
            tx.send(job).unwrap();
        }
        drop(tx);
        let (ops_tx, mut ops_rx) = mpsc::channel(8);
        serve(
            &asr,
            &rx,
            &Arc::default(),
            &Recognizing::default(),
            &ops_tx,
            &|_| {},
        );
        let mut ops = Vec::new();
        while let Ok(op) = ops_rx.try_recv() {
            ops.push(op);
        }
        (asr.0.into_inner().unwrap(), ops)
    }

    fn last_speculation_then_final(final_speech_end: u64) -> AsrJob {
        AsrJob::Final {
            segment: segment(
                3_000,
                final_speech_end,
                TurnEnd::ModelDone { probability: 0.95 },
            ),
            end_of_turn: Duration::from_millis(200),
            decided: Instant::now(),
            over_answer_only: false,
        }
    }

    fn speculate(samples: usize, speech_end_ms: u64) -> AsrJob {
        AsrJob::Speculate {
            snapshot: segment(samples, speech_end_ms, TurnEnd::Paused),
            went_on_at: 0,
        }
    }

    /// Sends a snapshot, then (once it is being recognised, after `meanwhile`, and after the worker
    /// offered its words if `offered` is expected) the final segment ending at `final_speech_end`;
    /// returns the ops the worker sent. (Queued together, the snapshot would be skipped unread: tested
    /// below.)
    fn snapshot_then_final(
        asr: &dyn SpeechToText,
        calls: &Mutex<Vec<usize>>,
        went_on: &Arc<AtomicU64>,
        final_speech_end: u64,
        offered: bool,
        meanwhile: impl FnOnce(),
    ) -> Vec<Op> {
        let (tx, rx) = channel();
        let (ops_tx, mut ops_rx) = mpsc::channel(8);
        tx.send(speculate(2_500, 1_000)).unwrap();
        let mut ops = Vec::new();
        let worker = std::thread::scope(|scope| {
            let handle = scope
                .spawn(move || serve(asr, &rx, went_on, &Recognizing::default(), &ops_tx, &|_| {}));
            while calls.lock().unwrap().is_empty() {
                std::thread::sleep(Duration::from_millis(1));
            }
            meanwhile();
            if offered {
                ops.push(ops_rx.blocking_recv().unwrap());
            }
            tx.send(last_speculation_then_final(final_speech_end))
                .unwrap();
            drop(tx);
            handle.join()
        });
        worker.unwrap();
        while let Ok(op) = ops_rx.try_recv() {
            ops.push(op);
        }
        ops
    }

    /// Runs the worker over `jobs` with `recognizing` until they are done.
    fn serve_with(asr: &Counting, recognizing: &Recognizing, jobs: Vec<AsrJob>) {
        let (tx, rx) = channel();
        for job in jobs {
            tx.send(job).unwrap();
        }
        drop(tx);
        let (ops_tx, _ops_rx) = mpsc::channel(8);
        serve(asr, &rx, &Arc::default(), recognizing, &ops_tx, &|_| {});
    }

    #[test]
    fn the_pause_words_are_there_for_the_end_of_turn_until_the_turn_ends() {
        let asr = Counting::default();
        let recognizing = Recognizing::default();
        serve_with(&asr, &recognizing, vec![speculate(2_500, 1_000)]);
        let heard = recognizing.words_of_this_pause(0).unwrap();
        assert_eq!(heard.text, "2500 samples");
        serve_with(&asr, &recognizing, vec![last_speculation_then_final(1_000)]);
        assert!(recognizing.words_of_this_pause(0).is_none());
    }

    #[test]
    fn a_pause_that_went_stale_before_its_recognition_leaves_no_words() {
        let asr = Counting::default();
        let recognizing = Recognizing::default();
        serve_with(&asr, &recognizing, vec![speculate(2_500, 1_000)]);
        // Offered when the speaker had gone on once, read when twice: skipped, and the earlier pause's
        // words are not this pause's either.
        let (tx, rx) = channel();
        tx.send(AsrJob::Speculate {
            snapshot: segment(3_000, 1_200, TurnEnd::Paused),
            went_on_at: 0,
        })
        .unwrap();
        drop(tx);
        let (ops_tx, _ops_rx) = mpsc::channel(8);
        serve(
            &asr,
            &rx,
            &Arc::new(AtomicU64::new(1)),
            &recognizing,
            &ops_tx,
            &|_| {},
        );
        assert!(recognizing.words_of_this_pause(0).is_none());
        assert_eq!(
            *asr.0.lock().unwrap(),
            vec![2_500],
            "the stale one not recognised"
        );
    }

    #[test]
    fn the_pause_transcript_is_reused_when_the_turn_ends_there() {
        let asr = Counting::default();
        let ops = snapshot_then_final(&asr, &asr.0, &Arc::default(), 1_000, true, || {});
        assert_eq!(
            *asr.0.lock().unwrap(),
            vec![2_500],
            "one decode: the pause's"
        );
        // The pause's words go to the session at once (it may start the answer), then the turn's end.
        assert_eq!(
            ops[0],
            Op::SpeechPaused {
                transcript: "2500 samples".into()
            }
        );
        match &ops[1] {
            Op::SpeechEnded {
                transcript,
                end_of_turn_ms,
                ..
            } => {
                assert_eq!(transcript, "2500 samples");
                assert_eq!(*end_of_turn_ms, 200);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn more_speech_after_the_pause_is_transcribed_afresh() {
        let (calls, ops) = run(vec![
            speculate(2_500, 1_000),
            last_speculation_then_final(1_400),
        ]);
        // Queued together: the stale snapshot is skipped (nothing anticipated), the final segment decoded.
        assert_eq!(calls, vec![3_000]);
        assert_eq!(ops.len(), 1, "{ops:?}");
        assert!(
            matches!(&ops[0], Op::SpeechEnded { transcript, .. } if transcript == "3000 samples")
        );
    }

    #[test]
    fn an_utterance_too_short_for_words_ends_with_none_and_keeps_its_flag() {
        let (calls, ops) = run(vec![AsrJob::Final {
            segment: segment(0, 300, TurnEnd::Hangover),
            end_of_turn: Duration::ZERO,
            decided: Instant::now(),
            over_answer_only: true,
        }]);
        assert!(calls.is_empty(), "nothing recognised: {calls:?}");
        assert!(
            matches!(
                &ops[..],
                [Op::SpeechEnded { transcript, over_answer_only: true, .. }] if transcript.is_empty()
            ),
            "{ops:?}"
        );
    }

    /// Recognises like [`Counting`], and the speaker goes on while it does (as `listen` reports it).
    struct GoesOnMeanwhile {
        counting: Counting,
        went_on: Arc<AtomicU64>,
    }

    impl SpeechToText for GoesOnMeanwhile {
        fn name(&self) -> &str {
            "goes on meanwhile"
        }

        fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError> {
            self.went_on.fetch_add(1, Ordering::SeqCst);
            self.counting.transcribe(samples)
        }
    }

    #[test]
    fn a_pause_the_speaker_talks_through_is_given_up_and_not_offered() {
        let went_on = Arc::new(AtomicU64::new(0));
        let asr = GoesOnMeanwhile {
            counting: Counting::default(),
            went_on: Arc::clone(&went_on),
        };
        let ops = snapshot_then_final(&asr, &asr.counting.0, &went_on, 1_000, false, || {});
        // No `speech_paused` for stale words, and the final segment is recognised afresh even though
        // it has the snapshot's start and end (the given-up snapshot has no transcript to reuse).
        assert_eq!(*asr.counting.0.lock().unwrap(), vec![2_500, 3_000]);
        assert_eq!(ops.len(), 1, "{ops:?}");
        assert_eq!(ended_with(&ops), "3000 samples");
    }

    /// A snapshot recognised, then the final segment ending at `final_speech_end`, with the speaker
    /// going on in between or not: the decodes made and the ops sent.
    fn speculate_then_final(final_speech_end: u64, went_on_between: bool) -> (Vec<usize>, Vec<Op>) {
        let asr = Counting::default();
        let went_on = Arc::new(AtomicU64::new(0));
        let ops = snapshot_then_final(&asr, &asr.0, &went_on, final_speech_end, false, || {
            if went_on_between {
                went_on.fetch_add(1, Ordering::SeqCst);
            }
        });
        (asr.0.into_inner().unwrap(), ops)
    }

    fn ended_with(ops: &[Op]) -> &str {
        ops.iter()
            .find_map(|op| match op {
                Op::SpeechEnded { transcript, .. } => Some(transcript.as_str()),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn a_final_segment_with_more_speech_or_after_going_on_is_recognised_afresh() {
        // More speech at the end than the snapshot held (the segmenter saw speech, however quiet).
        let (calls, ops) = speculate_then_final(1_064, false);
        assert_eq!(calls, vec![2_500, 3_000]);
        assert_eq!(ended_with(&ops), "3000 samples");
        // The same end, but the speaker went on in between (and stopped again).
        let (calls, ops) = speculate_then_final(1_000, true);
        assert_eq!(calls, vec![2_500, 3_000]);
        assert_eq!(ended_with(&ops), "3000 samples");
    }

    #[test]
    fn a_pause_already_talked_through_is_not_recognised() {
        let asr = Counting::default();
        let (tx, rx) = channel();
        tx.send(speculate(2_500, 1_000)).unwrap(); // stamped at count 0
        drop(tx);
        let (ops_tx, mut ops_rx) = mpsc::channel(8);
        serve(
            &asr,
            &rx,
            &Arc::new(AtomicU64::new(1)),
            &Recognizing::default(),
            &ops_tx,
            &|_| {},
        );
        assert!(
            asr.0.lock().unwrap().is_empty(),
            "no decode for stale words"
        );
        assert!(ops_rx.try_recv().is_err());
    }

    /// Records, for each decode, whether the worker counted itself as recognising meanwhile.
    struct Watched(Recognizing, Mutex<Vec<bool>>);

    impl SpeechToText for Watched {
        fn name(&self) -> &str {
            "watched"
        }

        fn transcribe(&self, _: &[f32]) -> Result<Transcript, AsrError> {
            self.1.lock().unwrap().push(self.0.is_running());
            Ok(Transcript::default())
        }
    }

    #[test]
    fn the_worker_counts_as_recognising_only_while_it_decodes() {
        let recognizing = Recognizing::default();
        let asr = Watched(recognizing.clone(), Mutex::default());
        let (tx, rx) = channel();
        // A pause's snapshot, then (in a second run: queued together, the snapshot would be skipped) a
        // final segment with more speech, which is decoded afresh.
        tx.send(speculate(2_500, 1_000)).unwrap();
        drop(tx);
        let (ops_tx, _ops) = mpsc::channel(8);
        serve(&asr, &rx, &Arc::default(), &recognizing, &ops_tx, &|_| {});
        let (tx, rx) = channel();
        tx.send(last_speculation_then_final(1_064)).unwrap();
        drop(tx);
        serve(&asr, &rx, &Arc::default(), &recognizing, &ops_tx, &|_| {});
        assert_eq!(*asr.1.lock().unwrap(), vec![true, true]);
        assert!(!recognizing.is_running(), "idle once the decodes returned");
    }
}
