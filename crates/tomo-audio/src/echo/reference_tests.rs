//! Tests of the echo reference's timeline (kept in their own file so the timeline stays readable).

use super::*;

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 / n as f32).collect()
}

#[test]
fn blocks_land_where_they_are_heard_and_silence_fills_the_rest() {
    let reference = RenderReference::new();
    let mut timeline = ReferenceTimeline::new(reference.clone());
    reference.push_at(&[0.5; 160], SAMPLE_RATE, 1_000);
    timeline.update();
    let mut out = vec![9.0; 400];
    timeline.read(900, &mut out);
    assert!(out[..100].iter().all(|&s| s == 0.0), "before: silence");
    assert!(out[100..260].iter().all(|&s| s == 0.5), "the block");
    assert!(out[260..].iter().all(|&s| s == 0.0), "after: silence");
    assert_eq!(timeline.last_played(), Some(1_160));
}

/// A 48 kHz device's pull of `frame`, `us` microseconds after `epoch`.
fn pulled(epoch: Instant, us: u64, frame: u64, stream: u64) -> Pull {
    Pull {
        at: epoch + Duration::from_micros(us),
        frame,
        rate: 48_000,
        stream,
    }
}

/// Where the first non-silent sample of the timeline is, reading `from` on.
fn first_sound(timeline: &mut ReferenceTimeline, from: i64) -> Option<i64> {
    let mut out = vec![0.0; 16_000];
    timeline.read(from, &mut out);
    out.iter().position(|&s| s != 0.0).map(|i| from + i as i64)
}

#[test]
fn a_new_stretch_goes_where_the_device_frames_put_it_unless_the_device_lost_time() {
    let epoch = Instant::now();
    let reference = RenderReference::with_epoch(epoch);
    let mut timeline = ReferenceTimeline::new(reference.clone());
    let pulled = |ms: u64, frame: u64| pulled(epoch, ms * 1_000, frame, 0);
    // An answer pulled as device frame 48 000, stamped at 1 s (16 000 at 16 kHz).
    reference.push_pulled(&[0.5; 480], 48_000, pulled(1_000, 48_000));
    timeline.update();
    assert_eq!(first_sound(&mut timeline, 15_000), Some(16_000));
    // The next answer, 2 s of device frames later; the clock's origin crept 2 ms earlier: the
    // frames place it, 2 s after the first.
    reference.push_pulled(&[0.5; 480], 48_000, pulled(2_998, 144_000));
    timeline.update();
    assert_eq!(first_sound(&mut timeline, 47_000), Some(48_000));
    // 50 ms more than its frames say: the device lost time, the stamp places it and anchors.
    reference.push_pulled(&[0.5; 480], 48_000, pulled(5_050, 240_000));
    timeline.update();
    assert_eq!(first_sound(&mut timeline, 79_000), Some(80_800));
    reference.push_pulled(&[0.5; 480], 48_000, pulled(6_049, 288_000));
    timeline.update();
    assert_eq!(first_sound(&mut timeline, 95_000), Some(96_800));
}

#[test]
fn stretches_count_from_the_anchor_through_the_origin_s_creep_but_not_across_a_reopened_device() {
    let epoch = Instant::now();
    let reference = RenderReference::with_epoch(epoch);
    let mut timeline = ReferenceTimeline::new(reference.clone());
    let pulled = |us: u64, frame: u64, stream: u64| pulled(epoch, us, frame, stream);
    reference.push_pulled(&[0.5; 480], 48_000, pulled(1_000_000, 48_000, 0));
    timeline.update();
    // Thirty answers 48 001 frames apart (16 000⅓ samples at 16 kHz): counted from the anchor they
    // land exactly; counted from each other the thirds would be rounded away, 10 samples short.
    for k in 1..=30u64 {
        let frame = 48_000 + k * 48_001;
        reference.push_pulled(&[0.5; 480], 48_000, pulled(frame * 1_000 / 48, frame, 0));
        timeline.update();
    }
    let last = 16_000 + (30 * 48_001) / 3;
    assert_eq!(first_sound(&mut timeline, last - 1_000), Some(last));
    // The clock's origin crept 100 ms earlier: the frames still place the next answer.
    let frame = 48_000 + 31 * 48_001;
    let counted = 16_000 + ((31.0 * 48_001.0) / 3.0_f64).round() as i64;
    reference.push_pulled(
        &[0.5; 480],
        48_000,
        pulled(frame * 1_000 / 48 - 100_000, frame, 0),
    );
    timeline.update();
    assert_eq!(first_sound(&mut timeline, counted - 2_000), Some(counted));
    // The device reopened and counts from 0 again, to a frame that counted on from the old anchor
    // would put it 1 000 samples later than its stamp, which passes for creep: the stamp places it.
    let at_us = frame * 1_000 / 48 + 2_000_000;
    let stamped = (at_us * 16 / 1_000) as i64;
    let reopened_frame = 48_000 + 3 * (stamped + 1_000 - 16_000) as u64;
    reference.push_pulled(&[0.5; 480], 48_000, pulled(at_us, reopened_frame, 1));
    timeline.update();
    assert_eq!(first_sound(&mut timeline, stamped - 2_000), Some(stamped));
}

/// Two sentences of one answer, the second pulled 30 ms after the first ended (synthesized late: the
/// device played silence in between), well within the stamps' tolerance: the gap stays on the
/// timeline (it was written away, the rest of the answer 30 ms early against its echo), and a block
/// the device pulled right after the last one continues it whatever its stamp says.
#[test]
fn a_short_gap_the_device_played_between_two_clips_stays_on_the_timeline() {
    let epoch = Instant::now();
    let reference = RenderReference::with_epoch(epoch);
    let mut timeline = ReferenceTimeline::new(reference.clone());
    // 16 kHz clips on a 48 kHz device: three frames per sample, no resampling on the timeline.
    let pull = |frame: u64, late_us: i64| {
        let us = (frame * 1_000 / 48) as i64 + late_us;
        pulled(epoch, us as u64, frame, 0)
    };
    reference.push_pulled(&[0.5; 160], SAMPLE_RATE, pull(48_000, 0));
    reference.push_pulled(&[0.25; 160], SAMPLE_RATE, pull(48_480 + 1_440, 0));
    // Pulled right after it, stamped 150 ms late (by its stamp alone it would start a stretch of its own).
    reference.push_pulled(
        &[0.75; 160],
        SAMPLE_RATE,
        pull(48_480 + 1_440 + 480, 150_000),
    );
    timeline.update();
    let mut out = vec![0.0; 1_000];
    timeline.read(16_000, &mut out);
    let first = |value: f32| out.iter().position(|&s| s == value);
    assert_eq!(first(0.5), Some(0));
    assert!(out[160..640].iter().all(|&s| s == 0.0), "the gap: silence");
    assert_eq!(first(0.25), Some(640));
    assert_eq!(first(0.75), Some(800));
}

#[test]
fn jittery_stamps_within_the_tolerance_continue_the_stretch() {
    let reference = RenderReference::new();
    let mut timeline = ReferenceTimeline::new(reference.clone());
    let signal = ramp(1_600);
    // Stamps off by up to ±10 ms (160 samples), as audio callbacks are.
    for (k, block) in signal.chunks(320).enumerate() {
        let jitter = [0, 150, -120, 90, -160][k];
        reference.push_at(block, SAMPLE_RATE, (k * 320) as i64 + jitter);
    }
    timeline.update();
    let mut out = vec![0.0; 1_600];
    timeline.read(0, &mut out);
    assert_eq!(out, signal, "no gaps, no overlaps");
}

#[test]
fn a_long_stretch_of_fractional_blocks_keeps_its_length() {
    let reference = RenderReference::new();
    let mut timeline = ReferenceTimeline::new(reference.clone());
    // 40 s of 256-sample blocks at 48 kHz (85⅓ samples each at 16 kHz), stamped where they are
    // heard. Rounded block by block the stretch's end ran 2 500 samples short, past the
    // tolerance: the answer broke into new stretches.
    let blocks = 7_500;
    for k in 0..blocks {
        reference.push_at(&[0.25; 256], 48_000, k * 256 / 3);
        timeline.update();
    }
    assert_eq!(timeline.last_pulled(), Some(blocks * 256 / 3));
}

#[test]
fn another_rate_is_resampled_onto_the_clock() {
    let reference = RenderReference::new();
    let mut timeline = ReferenceTimeline::new(reference.clone());
    let tone: Vec<f32> = (0..22_050)
        .map(|i| (2.0 * std::f32::consts::PI * 440.0 * i as f32 / 22_050.0).sin() * 0.5)
        .collect();
    for (k, block) in tone.chunks(441).enumerate() {
        reference.push_at(block, 22_050, (k * 320) as i64);
    }
    timeline.update();
    let mut out = vec![0.0; 16_000];
    timeline.read(0, &mut out);
    // One second of a 440 Hz tone at 16 kHz: ~880 zero crossings, and the held-back tail flushed.
    let crossings = out
        .windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count();
    assert!((crossings as i64 - 880).abs() < 10, "{crossings} crossings");
    assert!(
        out[15_500..15_900].iter().any(|s| s.abs() > 0.3),
        "tail present"
    );
}

#[test]
fn a_silent_capture_side_does_not_grow_memory() {
    let reference = RenderReference::new();
    for k in 0..(MAX_QUEUED_BLOCKS + 10) {
        reference.push_at(&[0.1; 16], SAMPLE_RATE, (k * 16) as i64);
    }
    assert_eq!(reference.dropped_blocks(), 10);
}
