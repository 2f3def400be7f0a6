//! Per-turn latency: end of user speech → ASR done → first LLM token → first sentence → first audio out.
//! The coordinator sees every event, so it stamps each milestone the moment the event passes.

use std::time::{Duration, Instant};

use tomo_protocol::{Event, LatencyOrigin, TurnId};

#[derive(Debug)]
pub(crate) struct LatencyTracker {
    turn_id: TurnId,
    origin: LatencyOrigin,
    start: Instant,
    /// When the end of the turn was decided (voice turns).
    end_of_turn: Option<Instant>,
    asr_done: Option<Instant>,
    first_token: Option<Instant>,
    first_sentence: Option<Instant>,
    first_audio: Option<Instant>,
    reported: bool,
}

impl LatencyTracker {
    /// A typed turn, measured from now.
    pub fn typed(turn_id: TurnId) -> Self {
        Self::new(turn_id, LatencyOrigin::TurnStart, Instant::now(), None)
    }

    /// A voice turn whose ASR just finished, `asr` after the end of speech.
    #[cfg(test)]
    pub fn spoken(turn_id: TurnId, asr: Duration) -> Self {
        Self::spoken_after(turn_id, Duration::ZERO, asr)
    }

    /// A voice turn whose end was decided `end_of_turn` after the last word, and whose ASR finished
    /// `asr` after that (just now): the clock starts at the last word.
    pub fn spoken_after(turn_id: TurnId, end_of_turn: Duration, asr: Duration) -> Self {
        let now = Instant::now();
        let decided = now.checked_sub(asr).unwrap_or(now);
        let speech_end = decided.checked_sub(end_of_turn).unwrap_or(decided);
        let mut tracker = Self::new(turn_id, LatencyOrigin::SpeechEnd, speech_end, Some(now));
        tracker.end_of_turn = Some(decided);
        tracker
    }

    fn new(
        turn_id: TurnId,
        origin: LatencyOrigin,
        start: Instant,
        asr_done: Option<Instant>,
    ) -> Self {
        Self {
            turn_id,
            origin,
            start,
            end_of_turn: None,
            asr_done,
            first_token: None,
            first_sentence: None,
            first_audio: None,
            reported: false,
        }
    }

    /// Notes a milestone; returns the report once the first audio has started.
    pub fn observe(&mut self, event: &Event) -> Option<Event> {
        let now = Instant::now();
        match event {
            Event::TextDelta { turn_id, .. } if *turn_id == self.turn_id => {
                self.first_token.get_or_insert(now);
            }
            Event::Sentence { turn_id, .. } if *turn_id == self.turn_id => {
                self.first_sentence.get_or_insert(now);
            }
            Event::AudioStarted { turn_id, .. }
                if *turn_id == self.turn_id && self.first_audio.is_none() =>
            {
                self.first_audio = Some(now);
                return self.report();
            }
            _ => {}
        }
        None
    }

    /// The report when the turn ends without audio (text mode, or nothing was spoken).
    pub fn finish(&mut self) -> Option<Event> {
        self.report()
    }

    fn report(&mut self) -> Option<Event> {
        if self.reported {
            return None;
        }
        self.reported = true;
        let since = |at: Option<Instant>| {
            at.map(|t| t.saturating_duration_since(self.start).as_millis() as u64)
        };
        Some(Event::LatencyReport {
            turn_id: self.turn_id,
            origin: self.origin,
            end_of_turn_ms: since(self.end_of_turn),
            asr_done_ms: since(self.asr_done),
            first_token_ms: since(self.first_token),
            first_sentence_ms: since(self.first_sentence),
            first_audio_ms: since(self.first_audio),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tomo_protocol::Sentence;

    #[test]
    fn milestones_are_reported_once_in_order() {
        let mut tracker = LatencyTracker::spoken(4, Duration::from_millis(250));
        assert!(
            tracker
                .observe(&Event::TextDelta {
                    turn_id: 4,
                    delta: "Hi".into()
                })
                .is_none()
        );
        assert!(
            tracker
                .observe(&Event::TextDelta {
                    turn_id: 9,
                    delta: "other turn".into()
                })
                .is_none()
        );
        let sentence = Sentence {
            index: 0,
            display_text: "Hi.".into(),
            tts_text: Some("Hi.".into()),
            actions: vec![],
            display_spans: vec![],
        };
        assert!(
            tracker
                .observe(&Event::Sentence {
                    turn_id: 4,
                    sentence
                })
                .is_none()
        );
        let audio = Event::AudioStarted {
            turn_id: 4,
            sentence_index: 0,
            duration_ms: 500,
            frame_ms: 20,
            envelope: vec![],
            actions: vec![],
        };
        let Some(Event::LatencyReport {
            origin,
            asr_done_ms,
            first_token_ms,
            first_sentence_ms,
            first_audio_ms,
            ..
        }) = tracker.observe(&audio)
        else {
            panic!("no report");
        };
        assert_eq!(origin, LatencyOrigin::SpeechEnd);
        let asr = asr_done_ms.unwrap();
        assert!(asr >= 250);
        assert!(first_token_ms.unwrap() >= asr);
        assert!(first_sentence_ms.unwrap() >= first_token_ms.unwrap());
        assert!(first_audio_ms.unwrap() >= first_sentence_ms.unwrap());
        assert!(tracker.observe(&audio).is_none());
        assert!(tracker.finish().is_none(), "reported once");
    }

    #[test]
    fn typed_turns_without_audio_report_at_the_end() {
        let mut tracker = LatencyTracker::typed(1);
        let Some(Event::LatencyReport {
            origin,
            asr_done_ms,
            first_audio_ms,
            ..
        }) = tracker.finish()
        else {
            panic!("no report");
        };
        assert_eq!(origin, LatencyOrigin::TurnStart);
        assert_eq!((asr_done_ms, first_audio_ms), (None, None));
    }
}
