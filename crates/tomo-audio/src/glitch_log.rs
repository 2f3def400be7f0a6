//! Rate-limited logging of transient output-device errors.

use std::time::{Duration, Instant};

/// ALSA-on-PulseAudio can report the same transient error thousands of times a second while audio keeps
/// playing; one warning per burst (with a count) keeps the log readable without hiding that it happens.
pub(crate) struct GlitchLog {
    window_start: Option<Instant>,
    suppressed: u64,
}

impl GlitchLog {
    pub(crate) const WINDOW: Duration = Duration::from_secs(10);

    pub(crate) fn new() -> Self {
        Self {
            window_start: None,
            suppressed: 0,
        }
    }

    /// True when this glitch should be logged; `suppressed()` then tells how many were not since the last.
    pub(crate) fn admit(&mut self, now: Instant) -> bool {
        match self.window_start {
            Some(start) if now.duration_since(start) < Self::WINDOW => {
                self.suppressed += 1;
                false
            }
            _ => {
                self.window_start = Some(now);
                true
            }
        }
    }

    pub(crate) fn take_suppressed(&mut self) -> u64 {
        std::mem::take(&mut self.suppressed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glitch_bursts_are_logged_once_per_window_with_a_count() {
        let mut log = GlitchLog::new();
        let t0 = Instant::now();
        assert!(log.admit(t0));
        assert_eq!(log.take_suppressed(), 0);
        for ms in 1..=500 {
            assert!(!log.admit(t0 + Duration::from_millis(ms)));
        }
        assert!(log.admit(t0 + GlitchLog::WINDOW + Duration::from_millis(1)));
        assert_eq!(log.take_suppressed(), 500);
        assert!(!log.admit(t0 + GlitchLog::WINDOW + Duration::from_millis(2)));
    }
}
