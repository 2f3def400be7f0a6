//! Silence the voice models put around a sentence. Leading silence is latency the listener hears (the
//! first sentence of an answer starts that much later), so it is cut down to a few milliseconds; the
//! tail is kept longer, as the breath between sentences.

/// Silence kept before the first sound. The cut is made at a quiet level ([`QUIET`]), so a soft onset
/// (an "h", an "f") is already above it and is kept whole.
pub(crate) const KEEP_BEFORE_S: f32 = 0.01;
/// Below this level a sample counts as silence (-50 dBFS: Piper's and Kokoro's padding is quieter).
pub(crate) const QUIET: f32 = 0.003;

/// Cuts the silence before the first sound down to [`KEEP_BEFORE_S`]. Audio without any sound is left
/// as it is.
pub(crate) fn trim_lead(samples: &mut Vec<f32>, sample_rate: u32) {
    let Some(first) = samples.iter().position(|s| s.abs() > QUIET) else {
        return;
    };
    let keep = (KEEP_BEFORE_S * sample_rate as f32) as usize;
    samples.drain(..first.saturating_sub(keep));
}

/// Below this a sample ends the tail (-40 dBFS: the faint residue after a voice's last sound is not kept).
const TAIL_QUIET: f32 = 0.01;

/// Cuts the silence after the last sound down to `keep_s` seconds.
pub(crate) fn trim_tail(samples: &mut Vec<f32>, sample_rate: u32, keep_s: f32) {
    let Some(last) = samples.iter().rposition(|s| s.abs() > TAIL_QUIET) else {
        return;
    };
    let keep = (keep_s * sample_rate as f32) as usize;
    samples.truncate((last + 1 + keep).min(samples.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_is_cut_to_a_few_milliseconds_and_the_tail_to_what_is_asked() {
        let rate = 24_000;
        let mut samples = vec![0.0; 24_000];
        samples.extend(vec![0.5; 2_400]);
        samples.extend(vec![0.0; 24_000]);
        trim_lead(&mut samples, rate);
        assert_eq!(samples.iter().position(|s| *s > 0.0), Some(240));
        trim_tail(&mut samples, rate, 0.15);
        assert_eq!(samples.len(), 240 + 2_400 + 3_600);
    }

    #[test]
    fn a_soft_onset_above_the_quiet_level_is_kept() {
        let mut samples = vec![0.0; 1_000];
        samples.extend(vec![0.005; 500]); // a soft "h", well under a loud vowel
        samples.extend(vec![0.5; 500]);
        trim_lead(&mut samples, 16_000);
        assert_eq!(samples.len(), 160 + 500 + 500);
    }

    #[test]
    fn silence_alone_is_left_as_it_is() {
        let mut silent = vec![0.0; 100];
        trim_lead(&mut silent, 16_000);
        trim_tail(&mut silent, 16_000, 0.1);
        assert_eq!(silent.len(), 100);
    }
}
