//! Speech over the character's answer (`Op::SpeechOverAnswer`): the audio is held at once, and the
//! words of the same utterance decide. A listening sound, nothing at all or the character's own words
//! (its echo) let the answer go on from where it stopped and start no turn; real words interrupt it,
//! history keeping what was heard up to the hold, and become the next turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use tomo_core::session::heard::CUT_MARKER;
use tomo_protocol::{Event, Op, ResumeReason};

use support::session::{collect_until, is_idle};
use support::voice::{self, Speaking, ended, paused};

const ANSWER: &str = "The weather tomorrow looks sunny. You could go to the beach.";

/// The character playing [`ANSWER`], halfway into its second sentence.
async fn speaking() -> Speaking {
    voice::speaking(
        &[ANSWER, "Oh, sorry. Saturday looks rainy."],
        "what's the weather tomorrow?",
    )
    .await
}

fn history(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("characters/hana/history.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Speech over the answer that turns out not to be meant for it: held, then resumed for `why`, no
/// turn started, and the answer plays on to the end and is stored whole.
async fn goes_on_after(pause_words: Option<&str>, final_words: &str, why: ResumeReason) {
    let mut s = speaking().await;
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    let held = collect_until(&mut s.events, |e| matches!(e, Event::AnswerHeld { .. })).await;
    assert!(matches!(
        held.last().unwrap().event,
        Event::AnswerHeld { turn_id: 1 }
    ));
    assert_eq!(s.speakers.holds(), [true]);
    if let Some(words) = pause_words {
        s.session.send(paused(words)).await.unwrap();
    }
    s.session.send(ended(final_words)).await.unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::AnswerResumed { .. })).await;
    assert!(
        matches!(seen.last().unwrap().event, Event::AnswerResumed { turn_id: 1, why: w } if w == why),
        "{seen:#?}"
    );
    assert_eq!(s.speakers.holds(), [true, false]);
    s.speakers.play_to_the_end();
    let seen = collect_until(&mut s.events, is_idle).await;
    assert!(
        !seen.iter().any(|e| matches!(
            e.event,
            Event::TurnStarted { .. } | Event::TurnAborted { .. } | Event::UserTranscript { .. }
        )),
        "no new turn, no interrupt: {seen:#?}"
    );
    assert_eq!(s.server.requests().len(), 1, "nothing asked of the model");
    let stored = history(s.dir.path());
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1]["content"], ANSWER);
    s.session.send(Op::Shutdown).await.unwrap();
    s.session.join().await;
}

#[tokio::test]
async fn an_mm_hm_over_the_answer_lets_it_go_on() {
    goes_on_after(Some("Mm-hmm."), "Mm-hmm.", ResumeReason::Backchannel).await;
}

#[tokio::test]
async fn the_characters_own_voice_lets_the_answer_go_on() {
    // What the echo canceller let through of "You could go to the beach", recognised.
    goes_on_after(None, "could go to the beach", ResumeReason::OwnVoice).await;
}

#[tokio::test]
async fn a_cough_with_no_words_lets_the_answer_go_on() {
    goes_on_after(Some(""), "", ResumeReason::NoWords).await;
}

#[tokio::test]
async fn real_words_over_the_answer_stop_it_where_it_was_held_and_become_the_next_turn() {
    let mut s = speaking().await;
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    collect_until(&mut s.events, |e| matches!(e, Event::AnswerHeld { .. })).await;
    // The pause's words decide: the answer stops with what was heard up to the hold.
    s.session
        .send(paused("What about Saturday?"))
        .await
        .unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::TurnAborted { .. })).await;
    let Event::TurnAborted { partial_text, .. } = &seen.last().unwrap().event else {
        unreachable!()
    };
    assert_eq!(
        partial_text,
        "The weather tomorrow looks sunny. You could go"
    );
    // The same words end the utterance and become the next turn.
    s.session.send(ended("What about Saturday?")).await.unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        Event::UserTranscript { text } if text == "What about Saturday?"
    )));
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, Event::AnswerResumed { .. })),
        "{seen:#?}"
    );
    let messages = s.server.requests()[1].messages().to_vec();
    let cut = format!("The weather tomorrow looks sunny. You could go{CUT_MARKER}");
    assert_eq!(messages[2]["content"], cut.as_str());
    assert_eq!(messages[3]["content"], "What about Saturday?");
    s.finish().await;
}

#[tokio::test]
async fn after_an_acknowledgement_more_words_hold_the_answer_again_and_stop_it() {
    let mut s = speaking().await;
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    s.session.send(paused("Yeah.")).await.unwrap();
    collect_until(&mut s.events, |e| matches!(e, Event::AnswerResumed { .. })).await;
    // The user goes on talking in the same utterance: held again at once, then stopped by the words.
    s.session.send(Op::SpeechResumed).await.unwrap();
    collect_until(&mut s.events, |e| matches!(e, Event::AnswerHeld { .. })).await;
    assert_eq!(s.speakers.holds(), [true, false, true]);
    s.session
        .send(ended("Yeah, but is it windy?"))
        .await
        .unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, Event::TurnAborted { turn_id: 1, .. }))
    );
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        Event::TurnStarted { user_text, .. } if user_text == "Yeah, but is it windy?"
    )));
    s.finish().await;
}

#[tokio::test]
async fn a_second_utterance_announced_before_the_first_ones_words_keeps_the_answer_held() {
    let mut s = speaking().await;
    // The listener announces two utterances before the recogniser sends the first one's words.
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    // The first was the character's echo: the second still holds the answer.
    s.session
        .send(ended("could go to the beach"))
        .await
        .unwrap();
    s.session.send(ended("Mm-hmm.")).await.unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::AnswerResumed { .. })).await;
    assert!(
        matches!(
            seen.last().unwrap().event,
            Event::AnswerResumed {
                why: ResumeReason::Backchannel,
                ..
            }
        ),
        "resumed by the second utterance's words: {seen:#?}"
    );
    assert_eq!(s.speakers.holds(), [true, false]);
    s.speakers.play_to_the_end();
    let seen = collect_until(&mut s.events, is_idle).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, Event::TurnStarted { .. }))
    );
    s.session.send(Op::Shutdown).await.unwrap();
    s.session.join().await;
}

/// The end of an utterance over the answer that stopped when the character went quiet.
fn ended_over_answer_only(words: &str) -> Op {
    Op::SpeechEnded {
        transcript: words.to_owned(),
        asr_ms: 100,
        end_of_turn_ms: 1_000,
        over_answer_only: true,
    }
}

#[tokio::test]
async fn speech_that_stopped_with_the_character_stops_it_only_when_it_asks_to() {
    // Words that are not the character's, but heard only while it spoke: what the canceller let
    // through of its voice, misheard.
    let mut s = speaking().await;
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    s.session
        .send(ended_over_answer_only("Chair."))
        .await
        .unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::AnswerResumed { .. })).await;
    assert!(matches!(
        seen.last().unwrap().event,
        Event::AnswerResumed {
            why: ResumeReason::OnlyOverAnswer,
            ..
        }
    ));
    // A short "Stop!" over the answer, the same way, stops it.
    s.session.send(Op::SpeechOverAnswer).await.unwrap();
    s.session
        .send(ended_over_answer_only("Stop!"))
        .await
        .unwrap();
    let seen = collect_until(&mut s.events, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, Event::TurnAborted { turn_id: 1, .. }))
    );
    assert_eq!(s.speakers.holds(), [true, false, true]);
    s.finish().await;
}
