//! ggml's iq4_nl blocks: 32 weights as one f16 scale and 32 four-bit indices into a fixed table of 16
//! non-uniform levels (18 bytes instead of 34 at q8_0). Quantized as ggml's `quantize_iq4_nl` does without
//! an importance matrix (the same operations in the same order, so the same bytes): each block's scale is
//! searched around the largest weight, and the one with the least weighted squared error is kept.
//!
//! Why this format: ggml's CPU backend repacks iq4_nl (and q4_0, q4_K) into interleaved 8-row tiles on
//! AVX2 machines and multiplies them with a matrix kernel, where q8_0 goes row by row. On the 2-core test
//! machine whisper base recognises a 2-3 s English question in ≈ 200 ms instead of ≈ 300 ms, with about
//! as many words right on the English speech fixtures (README, *Benchmarks*).

use half::f16;

/// Weights per block.
pub const BLOCK: usize = 32;
/// Bytes per block: the f16 scale, then two indices per byte.
pub const BLOCK_BYTES: usize = 2 + BLOCK / 2;

/// The 16 levels an index stands for (ggml's `kvalues_iq4nl`), times the block's scale.
const LEVELS: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// Scales tried on either side of the first guess (ggml's `ntry`).
const TRIES: i32 = 7;

/// Quantizes `values` (a multiple of [`BLOCK`] long, which the caller checks) into iq4_nl blocks.
pub fn quantize(values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() / BLOCK * BLOCK_BYTES);
    for block in values.chunks_exact(BLOCK) {
        let scale = block_scale(block);
        let inverse = if scale == 0.0 { 0.0 } else { 1.0 / scale };
        let index = |v: f32| nearest_level(inverse * v);
        out.extend_from_slice(&f16::from_f32(scale).to_le_bytes());
        // Byte j holds weight j in its low nibble and weight j + 16 in its high one.
        let (low, high) = block.split_at(BLOCK / 2);
        out.extend(
            low.iter()
                .zip(high)
                .map(|(a, b)| index(*a) | (index(*b) << 4)),
        );
    }
    out
}

/// The block's scale: a first guess that puts the largest weight at 127 steps, then 15 that put it at
/// -127 ± 7, each judged by the squared error weighted by the weight's own square (big weights matter
/// most) once refitted (least squares) to the levels it picks; the best refit wins.
fn block_scale(block: &[f32]) -> f32 {
    let largest = block
        .iter()
        .copied()
        .fold(0.0f32, |m, v| if v.abs() > m.abs() { v } else { m });
    if largest.abs() < 1e-15 {
        return 0.0;
    }
    // For a set of levels, the scale that fits them best and how much it explains (Σqx²/Σq²).
    let fit = |inverse: f32| {
        let (mut qx, mut qq) = (0.0f32, 0.0f32);
        for &v in block {
            let q = level(nearest_level(inverse * v));
            let weight = v * v;
            qx += weight * q * v;
            qq += weight * q * q;
        }
        (qx, qq)
    };
    let first = level(0);
    // As ggml computes it (the scale, then its inverse), so that the levels picked are the same.
    let guess = -largest / first;
    let (qx, qq) = fit(1.0 / guess);
    let mut scale = if qq > 0.0 { qx / qq } else { 0.0 };
    let mut best = scale * qx;
    for step in -TRIES..=TRIES {
        let (qx, qq) = fit((step as f32 + first) / largest);
        if qq > 0.0 && qx * qx > best * qq {
            scale = qx / qq;
            best = scale * qx;
        }
    }
    scale
}

fn level(index: u8) -> f32 {
    f32::from(LEVELS[usize::from(index) % LEVELS.len()])
}

/// The index of the level nearest to `x` (a tie goes to the upper level, as in ggml).
fn nearest_level(x: f32) -> u8 {
    let last = LEVELS.len() - 1;
    if x <= level(0) {
        return 0;
    }
    if x >= level(last as u8) {
        return last as u8;
    }
    // The first level above x; x lies between it and the one before.
    let upper = LEVELS
        .partition_point(|&l| f32::from(l) <= x)
        .clamp(1, last);
    let (below, above) = (level(upper as u8 - 1), level(upper as u8));
    if x - below < above - x {
        (upper - 1) as u8
    } else {
        upper as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dequantize(bytes: &[u8]) -> Vec<f32> {
        bytes
            .chunks_exact(BLOCK_BYTES)
            .flat_map(|block| {
                let scale = f16::from_le_bytes([block[0], block[1]]).to_f32();
                let value = move |i: u8| level(i) * scale;
                let low: Vec<f32> = block[2..].iter().map(|b| value(b & 0x0f)).collect();
                let high: Vec<f32> = block[2..].iter().map(|b| value(b >> 4)).collect();
                low.into_iter().chain(high)
            })
            .collect()
    }

    /// A weight matrix's worth of values shaped like a trained layer's: mostly small, a few large.
    fn weights(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let x = ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 0.2;
                if i % 29 == 0 { x * 8.0 } else { x }
            })
            .collect()
    }

    #[test]
    fn blocks_hold_a_scale_and_two_indices_per_byte() {
        let values = weights(3 * BLOCK);
        let bytes = quantize(&values);
        assert_eq!(bytes.len(), 3 * BLOCK_BYTES);
        assert_eq!(dequantize(&bytes).len(), values.len());
    }

    #[test]
    fn the_searched_scale_fits_at_least_as_well_as_the_first_guess() {
        let values = weights(64 * BLOCK);
        let restored = dequantize(&quantize(&values));
        for (block, back) in values.chunks(BLOCK).zip(restored.chunks(BLOCK)) {
            let largest = block
                .iter()
                .fold(0.0f32, |m, v| if v.abs() > m.abs() { *v } else { m });
            let guess = -largest / level(0);
            let plain: Vec<f32> = block
                .iter()
                .map(|v| level(nearest_level(v / guess)) * guess)
                .collect();
            let error = |got: &[f32]| -> f32 {
                block
                    .iter()
                    .zip(got)
                    .map(|(v, g)| v * v * (v - g) * (v - g))
                    .sum()
            };
            // The f16 rounding of the scale costs a little on top of the search's own result.
            assert!(
                error(back) <= error(&plain) * 1.01 + 1e-12,
                "searched {} > first guess {}",
                error(back),
                error(&plain)
            );
        }
    }

    #[test]
    fn every_weight_comes_back_within_half_the_widest_gap_between_levels() {
        let values = weights(16 * BLOCK);
        let restored = dequantize(&quantize(&values));
        for (block, back) in values.chunks(BLOCK).zip(restored.chunks(BLOCK)) {
            let largest = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            // The widest gap is 24 of 127 (89 → 113); the search may stretch the scale by 8/127 either way.
            let bound = largest / 119.0 * 24.0 / 2.0 * 1.1;
            for (got, want) in back.iter().zip(block) {
                assert!(
                    (got - want).abs() <= bound,
                    "{got} vs {want} (bound {bound})"
                );
            }
        }
    }

    #[test]
    fn a_silent_block_has_a_zero_scale_and_restores_to_zeros() {
        let bytes = quantize(&[0.0; BLOCK]);
        assert_eq!(&bytes[..2], &[0, 0]);
        assert!(dequantize(&bytes).iter().all(|v| *v == 0.0));
    }

    #[test]
    fn levels_are_picked_by_distance_ties_going_up() {
        assert_eq!(nearest_level(-200.0), 0);
        assert_eq!(nearest_level(500.0), 15);
        assert_eq!(nearest_level(1.0), 8);
        assert_eq!(nearest_level(6.9), 8);
        assert_eq!(nearest_level(7.0), 9); // 6 from 1 and from 13: the upper one
        assert_eq!(nearest_level(-4.5), 8); // 5.5 from -10 and from 1
        assert_eq!(nearest_level(-4.6), 7);
    }
}

#[cfg(test)]
mod like_ggml {
    use super::*;

    /// ggml's own iq4_nl quantizer (`quantize_iq4_nl`, through `ggml_quantize_chunk`) on `values`, one row.
    fn ggml_quantize(values: &[f32]) -> Vec<u8> {
        let mut out = vec![0u8; values.len() / BLOCK * BLOCK_BYTES];
        #[allow(unsafe_code)]
        // SAFETY: `values` holds one row of `values.len()` floats (a multiple of 32), `out` has room for
        // its iq4_nl blocks, and iq4_nl needs no importance matrix (null) nor ggml_quantize_init.
        let written = unsafe {
            whisper_rs_sys::ggml_quantize_chunk(
                whisper_rs_sys::ggml_type_GGML_TYPE_IQ4_NL,
                values.as_ptr(),
                out.as_mut_ptr().cast(),
                0,
                1,
                values.len() as i64,
                std::ptr::null(),
            )
        };
        assert_eq!(written, out.len());
        out
    }

    #[test]
    fn blocks_are_byte_for_byte_what_ggml_writes() {
        // Shaped like trained weights: mostly small, some large, a few exact zeros and a silent block.
        let mut values: Vec<f32> = (0..512 * 32)
            .map(|i| {
                let x = ((i * 7919 % 1013) as f32 / 1013.0 - 0.5) * 0.3;
                match i % 37 {
                    0 => x * 9.0,
                    1 => 0.0,
                    _ => x,
                }
            })
            .collect();
        values[64..96].fill(0.0);
        assert_eq!(quantize(&values), ggml_quantize(&values));
    }
}
