//! A voice front end's side of a session, for the tests: the speech ops, and speakers that are still
//! playing the answer (at a playhead the test sets) until the test lets them drain.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tomo_core::session::SessionHandle;
use tomo_core::sink::{OutputSink, Playhead, SinkError};
use tomo_protocol::{Event, EventEnvelope, Op, Sentence, TurnId};
use tomo_testkit::{ScriptedServer, script};

use super::session::{collect_until, environment, is_idle, say, start, write_profile};

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
    /// Every `prepare`: (sentences enqueued before it, the text).
    pub prepared: Mutex<Vec<(usize, String)>>,
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

    fn prepare(&self, _turn: TurnId, tts_text: &str) {
        let enqueued = self.sentences.lock().unwrap().len();
        self.prepared
            .lock()
            .unwrap()
            .push((enqueued, tts_text.to_owned()));
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

/// A session whose character has written its whole answer to `question` (the server's first reply)
/// and whose speakers are halfway into its second sentence.
pub struct Speaking {
    pub server: ScriptedServer,
    pub dir: tempfile::TempDir,
    pub speakers: Arc<Speakers>,
    pub session: SessionHandle,
    pub events: UnboundedReceiver<EventEnvelope>,
}

pub async fn speaking(replies: &[&str], question: &str) -> Speaking {
    let speaking = answered(replies, question).await;
    *speaking.speakers.playhead.lock().unwrap() = Some(Playhead {
        sentence: 1,
        fraction: 0.5,
    });
    speaking
}

/// A session whose character has written its whole answer to `question` (the server's first reply);
/// its speakers have not played any of it yet.
pub async fn answered(replies: &[&str], question: &str) -> Speaking {
    let server = ScriptedServer::start(replies.iter().map(|r| script::text_reply(r)).collect())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let speakers = Arc::new(Speakers::default());
    let (session, mut events) =
        start(&profile, environment(dir.path(), vec![]), speakers.clone()).await;
    say(&session, question).await;
    collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    Speaking {
        server,
        dir,
        speakers,
        session,
        events,
    }
}

impl Speaking {
    /// Plays the answer in flight to its end, waits for the session to be idle, and stops it.
    pub async fn finish(mut self) {
        self.speakers.play_to_the_end();
        collect_until(&mut self.events, is_idle).await;
        self.session.send(Op::Shutdown).await.unwrap();
        self.session.join().await;
    }
}
