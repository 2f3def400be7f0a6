//! Token pipeline overhead per token: a realistic ~2,000-token answer streamed as small deltas.
//!
//! Two chunkings: 1–4 characters per delta (the worst case: many tiny deltas) and word-sized deltas with
//! the leading space attached (what BPE tokenizers produce). Throughput is reported in tokens (deltas),
//! so criterion's "time" divided by the element count is the per-token overhead.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tomo_core::pipeline::{Pipeline, PipelineItem, PipelineSettings};

/// One paragraph mixing what the pipeline has to handle: markdown, numbers, abbreviations, emotion tags,
/// emoji, a URL, CJK, quotes, a list and a code block.
const PARAGRAPHS: &[&str] = &[
    "[joy] Oh, that's a great question, and I'm really happy you asked! ",
    "Let me think about it for a moment… The short answer is **yes**, but there are a few caveats. ",
    "Dr. Smith's 2019 study (see https://example.com/papers/a.b?id=42) found that 3.14% of 1,000 people, \
     e.g. students and teachers, preferred tea at 9 a.m. rather than coffee. ",
    "Here is what I would do:\n",
    "1. Start small, e.g. ten minutes a day.\n2. Track it in a notebook.\n3. Review on Sundays. ",
    "\"Consistency beats intensity,\" as my friend likes to say. \"Don't you agree?\" she asked. ",
    "今天天气很好！我们可以一起去公园散步，然后喝杯咖啡。",
    "If you like code, here's a tiny helper:\n```python\ndef add(a, b):\n    return a + b\n```\n",
    "You can call `add(1, 2)` and it returns 3. Pretty neat, right? 😊 ",
    "[thinking] Anyway, the weather today is around 25°C, so it costs you nothing to go outside. ",
    "<think>The user may want more detail. I should keep it short.</think>",
    "Hope this helps, and let me know if you want more ideas!\n\n",
];

fn answer() -> String {
    let mut text = String::new();
    // ~170 tokens per round of paragraphs; 12 rounds ≈ 2,000 word-sized tokens.
    for _ in 0..12 {
        for p in PARAGRAPHS {
            text.push_str(p);
        }
    }
    text
}

/// Deltas of 1–4 characters, sizes from a fixed pseudo-random sequence so runs are comparable.
fn tiny_deltas(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut seed: u32 = 0x2545_f491;
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let end = (i + 1 + (seed % 4) as usize).min(chars.len());
        out.push(chars[i..end].iter().collect());
        i = end;
    }
    out
}

/// Word-sized deltas, the leading whitespace attached to the word as tokenizers do.
fn word_deltas(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_whitespace() && !current.trim().is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn run(settings: &PipelineSettings, deltas: &[String]) -> usize {
    let mut pipeline = Pipeline::new(settings);
    let mut produced = 0;
    for d in deltas {
        produced += pipeline.push(PipelineItem::Text(d.clone())).len();
    }
    produced + pipeline.finish().len()
}

fn bench(c: &mut Criterion) {
    let settings = PipelineSettings {
        emotions: vec!["joy".into(), "thinking".into(), "sad".into()],
        ..PipelineSettings::default()
    };
    let text = answer();
    let mut group = c.benchmark_group("pipeline");
    for (name, deltas) in [
        ("tiny_deltas", tiny_deltas(&text)),
        ("word_deltas", word_deltas(&text)),
    ] {
        group.throughput(Throughput::Elements(deltas.len() as u64));
        group.bench_function(format!("{name}/{}_tokens", deltas.len()), |b| {
            b.iter(|| run(black_box(&settings), black_box(&deltas)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Short runs: the machine is shared, and the numbers are stable well before criterion's defaults.
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
