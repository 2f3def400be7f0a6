#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use tomo_plugin_api::scheduler::{Scheduler, SchedulerContext, SchedulerRequest};
use tomo_protocol::{Action, Event, Observation, PluginState, Sentence};

/// A wall clock the test moves by hand.
struct ScriptedClock(AtomicI64);

impl Clock for ScriptedClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

const T0: i64 = 1_800_000_000_000;

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

fn config(text: &str) -> MoodChatConfig {
    parse_config::<MoodChatConfig>(ID, &table(text))
        .unwrap()
        .validate()
        .unwrap()
}

const CADENCE: &str = r#"
half_life_s = 0
[[cadence]]
min_score = 40
interval_s = 300
[[cadence]]
min_score = 70
interval_s = 60
"#;

#[test]
fn defaults_parse_and_cadence_picks_the_highest_matching_step() {
    assert_eq!(config(""), MoodChatConfig::default());
    let c = config(CADENCE);
    assert_eq!(c.interval(85.0), Some(Duration::from_secs(60)));
    assert_eq!(c.interval(70.0), Some(Duration::from_secs(60)));
    assert_eq!(c.interval(55.0), Some(Duration::from_secs(300)));
    assert_eq!(c.interval(10.0), None, "low mood: never");
}

#[test]
fn bad_config_names_the_field() {
    let err = parse_config::<MoodChatConfig>(ID, &table("baseline = 120"))
        .unwrap()
        .validate()
        .unwrap_err();
    assert!(err.to_string().contains("mood_chat.baseline"), "{err}");
    let err =
        parse_config::<MoodChatConfig>(ID, &table("[[cadence]]\nmin_score = 50\ninterval_s = -1"))
            .unwrap()
            .validate()
            .unwrap_err();
    assert!(err.to_string().contains("cadence[0].interval_s"), "{err}");
    let err = parse_config::<MoodChatConfig>(ID, &table("chatty = true")).unwrap_err();
    assert!(err.to_string().contains("chatty"), "{err}");
}

#[test]
fn mood_decays_towards_the_baseline_and_persists_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mood.json");
    let mut mood = Mood::load(&path, 50.0, T0).unwrap();
    assert_eq!(mood.score, 50.0);
    mood.apply(40.0, true);
    assert_eq!(mood.score, 90.0);
    mood.apply(30.0, true);
    assert_eq!(mood.score, 100.0, "clamped");
    // One half-life later, halfway back to 60.
    mood.decay(T0 + 3_600_000, 60.0, 3600.0);
    assert!((mood.score - 80.0).abs() < 1e-9, "{}", mood.score);
    mood.save(&path).unwrap();
    assert!(!path.with_extension("json.tmp").exists());
    let again = Mood::load(&path, 50.0, T0).unwrap();
    assert_eq!(again, mood);
    std::fs::write(&path, "not json").unwrap();
    let err = Mood::load(&path, 50.0, T0).unwrap_err();
    assert!(err.to_string().contains("mood.json"), "{err}");
}

struct Harness {
    requests: mpsc::UnboundedReceiver<SchedulerRequest>,
    events: mpsc::UnboundedSender<Event>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

fn start(config_text: &str, score: f64) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    Mood {
        score,
        updated_ms: T0,
    }
    .save(&dir.path().join("mood.json"))
    .unwrap();
    let clock = Arc::new(ScriptedClock(AtomicI64::new(T0)));
    let scheduler = Arc::new(MoodChat::new(config(config_text), clock));
    let (events, events_rx) = mpsc::unbounded_channel();
    let (req_tx, requests) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let ctx = SchedulerContext {
        events: events_rx,
        requests: req_tx,
        data_dir: dir.path().to_owned(),
        agent_id: "hana".into(),
        cancel: cancel.clone(),
    };
    let task = tokio::spawn(scheduler.run(ctx));
    Harness {
        requests,
        events,
        cancel,
        task,
        _dir: dir,
    }
}

/// Advances the paused clock second by second for `secs`, collecting proactive reasons.
async fn proactive_over(h: &mut Harness, secs: u64) -> Vec<String> {
    let mut reasons = Vec::new();
    for _ in 0..secs {
        tokio::time::advance(Duration::from_secs(1)).await;
        // Let the woken tasks pass the request along before looking.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        while let Ok(request) = h.requests.try_recv() {
            if let SchedulerRequest::Proactive(p) = request {
                reasons.push(p.reason);
            }
        }
    }
    reasons
}

#[tokio::test(start_paused = true)]
async fn high_mood_is_chatty_and_low_mood_quiet() {
    let mut high = start(CADENCE, 85.0);
    let reasons = proactive_over(&mut high, 630).await;
    assert_eq!(reasons.len(), 10, "every 60 s: {reasons:?}");
    assert_eq!(reasons[0], "idle for 60 s, mood 85");

    let mut mid = start(CADENCE, 55.0);
    assert_eq!(proactive_over(&mut mid, 630).await.len(), 2);

    let mut low = start(CADENCE, 20.0);
    assert!(proactive_over(&mut low, 630).await.is_empty());

    for h in [high, mid, low] {
        h.cancel.cancel();
        h.task.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn activity_restarts_the_wait_and_observations_shorten_it() {
    let mut h = start(CADENCE, 85.0);
    // The user talks every 30 s: never quiet for 60 s.
    for _ in 0..10 {
        assert!(proactive_over(&mut h, 30).await.is_empty());
        h.events
            .send(Event::StateChanged {
                from: tomo_protocol::SessionState::Idle,
                to: tomo_protocol::SessionState::Thinking,
            })
            .unwrap();
    }
    h.events
        .send(Event::Observation(Observation {
            source: "screen_watch".into(),
            at_ms: T0,
            window: "Game".into(),
            text: "Level   2\ncomplete".into(),
            region: None,
        }))
        .unwrap();
    tokio::task::yield_now().await;
    let reasons = proactive_over(&mut h, 30).await;
    assert_eq!(
        reasons,
        ["new text on \"Game\", mood 85"],
        "half the wait after a screen change; the screen text itself never in the reason"
    );
}

#[tokio::test(start_paused = true)]
async fn mood_tags_and_emotions_move_the_score_and_persist() {
    let mut h = start(&format!("{CADENCE}\n[emotion_deltas]\nsad = -7\n"), 50.0);
    let mut scores = Vec::new();
    let sentence = |actions| Event::Sentence {
        turn_id: 1,
        sentence: Sentence {
            index: 0,
            display_text: "Hi.".into(),
            tts_text: Some("Hi.".into()),
            actions,
            display_spans: vec![],
        },
    };
    h.events
        .send(sentence(vec![Action::Tag {
            key: "mood".into(),
            value: "+10".into(),
        }]))
        .unwrap();
    h.events
        .send(sentence(vec![Action::Emotion { name: "sad".into() }]))
        .unwrap();
    h.events
        .send(sentence(vec![Action::Tag {
            key: "mood".into(),
            value: "90".into(),
        }]))
        .unwrap();
    while scores.len() < 4 {
        if let Some(SchedulerRequest::State(PluginState {
            value: Some(score),
            reason,
            ..
        })) = h.requests.recv().await
        {
            scores.push((score, reason));
        }
    }
    assert_eq!(scores[0], (50.0, "loaded".to_owned()));
    assert_eq!(scores[1], (60.0, "tag [mood:+10]".to_owned()));
    assert_eq!(scores[2], (53.0, "emotion sad".to_owned()));
    assert_eq!(scores[3], (90.0, "tag [mood:90]".to_owned()));
    h.cancel.cancel();
    h.task.await.unwrap();
    let saved = Mood::load(&h._dir.path().join("mood.json"), 0.0, T0).unwrap();
    assert_eq!(saved.score, 90.0);
}
