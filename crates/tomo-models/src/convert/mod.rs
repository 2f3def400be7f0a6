//! faster-whisper (CTranslate2) weights → whisper.cpp ggml, in Rust.
//!
//! No package ships whisper.cpp files, but several ship faster-whisper's `model.bin`; the weights are the
//! same OpenAI checkpoint in another container. The ggml file is: magic `0x67676d6c`, 11 i32 hparams, the mel
//! filter bank (i32 n_mel, i32 n_fft, f32 data), the vocab (i32 count, then u32 length + bytes each), then
//! tensors (i32 n_dims, i32 name length, i32 type 0=f32/1=f16/8=q8_0/20=iq4_nl, dims innermost first, name, data)
//! named like OpenAI's checkpoint. whisper.cpp loads 2-D+ weights as f16 (or the file type's quantization)
//! and the rest as f32, and expects every tensor it knows exactly once.

mod ct2;
mod iq4;
mod npy;
mod q8;

use std::io::Write;

use half::{bf16, f16};

pub use ct2::{Ct2Model, DType, Variable};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

const GGML_MAGIC: u32 = 0x6767_6d6c;

/// How the weight matrices are stored (everything else is f32; the convolutions stay f16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GgmlWeights {
    #[default]
    F16,
    /// 8-bit blocks ([`q8`]): faster on CPUs with integer dot products, near-lossless.
    Q8_0,
    /// 4-bit blocks on a non-uniform scale ([`iq4`]): faster still where ggml multiplies them as tiles
    /// (AVX2), a little less exact.
    Iq4Nl,
}

impl GgmlWeights {
    /// The header's `ftype`: ggml's file type, plus 1000 × the quantization format version (2) for
    /// quantized files, as whisper.cpp's `quantize` writes it.
    fn ftype(self) -> i32 {
        match self {
            Self::F16 => 1,
            Self::Q8_0 => 2 * 1000 + 7,
            Self::Iq4Nl => 2 * 1000 + 19,
        }
    }

    /// The tensor type of a quantized matrix, its block length and the quantizer (`None` for f16).
    fn blocks(self) -> Option<(i32, usize, Quantizer)> {
        match self {
            Self::F16 => None,
            Self::Q8_0 => Some((TYPE_Q8_0, q8::BLOCK, q8::quantize)),
            Self::Iq4Nl => Some((TYPE_IQ4_NL, iq4::BLOCK, iq4::quantize)),
        }
    }
}

/// Turns a matrix's values (a multiple of its block length) into ggml blocks.
type Quantizer = fn(&[f32]) -> Vec<u8>;

/// ggml's tensor type ids.
const TYPE_F32: i32 = 0;
const TYPE_F16: i32 = 1;
const TYPE_Q8_0: i32 = 8;
const TYPE_IQ4_NL: i32 = 20;

/// What was converted, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhisperHparams {
    pub n_vocab: i32,
    pub n_audio_ctx: i32,
    pub n_audio_state: i32,
    pub n_audio_head: i32,
    pub n_audio_layer: i32,
    pub n_text_ctx: i32,
    pub n_text_state: i32,
    pub n_text_head: i32,
    pub n_text_layer: i32,
    pub n_mels: i32,
}

/// Converts `model_bin` (CT2 `WhisperSpec`) with openai-whisper's `mel_filters.npz` and a `.tiktoken` vocab.
pub fn ct2_to_ggml(
    model_bin: &[u8],
    mel_filters_npz: &[u8],
    tiktoken: &[u8],
    weights: GgmlWeights,
    out: &mut dyn Write,
) -> Result<WhisperHparams, ConvertError> {
    let model = Ct2Model::parse(model_bin)?;
    if !model.spec.is_empty() && model.spec != "WhisperSpec" {
        return Err(ConvertError(format!(
            "expected a Whisper model, found spec `{}`",
            model.spec
        )));
    }
    let hp = hparams(&model)?;
    let mel = npy::npz_f32(mel_filters_npz, &format!("mel_{}", hp.n_mels))?;
    let tokens = tiktoken_tokens(tiktoken)?;

    let mut w = Writer { out, bytes: 0 };
    w.u32(GGML_MAGIC)?;
    for value in [
        hp.n_vocab,
        hp.n_audio_ctx,
        hp.n_audio_state,
        hp.n_audio_head,
        hp.n_audio_layer,
        hp.n_text_ctx,
        hp.n_text_state,
        hp.n_text_head,
        hp.n_text_layer,
        hp.n_mels,
        weights.ftype(),
    ] {
        w.i32(value)?;
    }
    if mel.shape.len() != 2 {
        return Err(ConvertError(format!(
            "mel filters have shape {:?}, expected 2-D",
            mel.shape
        )));
    }
    w.i32(to_i32(mel.shape[0])?)?;
    w.i32(to_i32(mel.shape[1])?)?;
    for value in &mel.data {
        w.raw(&value.to_le_bytes())?;
    }
    w.i32(to_i32(tokens.len())?)?;
    for token in &tokens {
        w.i32(to_i32(token.len())?)?;
        w.raw(token)?;
    }
    write_tensors(&model, &hp, weights, &mut w)?;
    tracing::info!(
        ?hp,
        bytes = w.bytes,
        "converted CTranslate2 whisper model to ggml"
    );
    Ok(hp)
}

fn hparams(model: &Ct2Model) -> Result<WhisperHparams, ConvertError> {
    let dims = |name: &str| model.get(name).map(|v| v.shape.clone());
    let heads = |name: &str| {
        model
            .get(name)?
            .as_int()
            .ok_or_else(|| ConvertError(format!("`{name}` is not an integer scalar")))
    };
    let layers = |side: &str| {
        (0..)
            .take_while(|i| {
                model
                    .variables
                    .contains_key(&format!("{side}/layer_{i}/ffn/linear_0/weight"))
            })
            .count()
    };
    let embeddings = dims("decoder/embeddings/weight")?;
    let enc_pos = dims("encoder/position_encodings/encodings")?;
    let dec_pos = dims("decoder/position_encodings/encodings")?;
    let conv1 = dims("encoder/conv1/weight")?;
    let two = |shape: &[usize], name: &str| -> Result<(i32, i32), ConvertError> {
        match shape {
            [a, b] => Ok((to_i32(*a)?, to_i32(*b)?)),
            _ => Err(ConvertError(format!(
                "`{name}` has shape {shape:?}, expected 2-D"
            ))),
        }
    };
    let (n_vocab, _) = two(&embeddings, "decoder/embeddings/weight")?;
    let (n_audio_ctx, n_audio_state) = two(&enc_pos, "encoder/position_encodings/encodings")?;
    let (n_text_ctx, n_text_state) = two(&dec_pos, "decoder/position_encodings/encodings")?;
    let n_mels = match conv1.as_slice() {
        [_, mels, 3] => to_i32(*mels)?,
        other => {
            return Err(ConvertError(format!(
                "`encoder/conv1/weight` has shape {other:?}"
            )));
        }
    };
    Ok(WhisperHparams {
        n_vocab,
        n_audio_ctx,
        n_audio_state,
        n_audio_head: to_i32(heads("encoder/num_heads")?)?,
        n_audio_layer: to_i32(layers("encoder"))?,
        n_text_ctx,
        n_text_state,
        n_text_head: to_i32(heads("decoder/num_heads")?)?,
        n_text_layer: to_i32(layers("decoder"))?,
        n_mels,
    })
}

/// Tensors in the order of OpenAI's state dict (whisper.cpp does not care, people diffing files do).
fn write_tensors(
    model: &Ct2Model,
    hp: &WhisperHparams,
    weights: GgmlWeights,
    w: &mut Writer,
) -> Result<(), ConvertError> {
    let mut put =
        |name: &str, var: &Variable, rows: Option<(usize, usize)>, reshape: Option<Vec<usize>>| {
            tensor(w, name, var, rows, reshape, weights)
        };
    let get = |name: &str| model.get(name);
    put(
        "encoder.positional_embedding",
        get("encoder/position_encodings/encodings")?,
        None,
        None,
    )?;
    for conv in ["conv1", "conv2"] {
        put(
            &format!("encoder.{conv}.weight"),
            get(&format!("encoder/{conv}/weight"))?,
            None,
            None,
        )?;
        let bias = get(&format!("encoder/{conv}/bias"))?;
        // whisper.cpp adds the bias to a (frames, channels) result: it wants shape (channels, 1).
        put(
            &format!("encoder.{conv}.bias"),
            bias,
            None,
            Some(vec![bias.elements(), 1]),
        )?;
    }
    for i in 0..hp.n_audio_layer {
        let (ct, oa) = (format!("encoder/layer_{i}"), format!("encoder.blocks.{i}"));
        attention(
            &mut put,
            model,
            &format!("{ct}/self_attention"),
            &format!("{oa}.attn"),
            &format!("{oa}.attn_ln"),
        )?;
        mlp(&mut put, model, &ct, &oa)?;
    }
    norm(&mut put, model, "encoder/layer_norm", "encoder.ln_post")?;

    put(
        "decoder.positional_embedding",
        get("decoder/position_encodings/encodings")?,
        None,
        None,
    )?;
    put(
        "decoder.token_embedding.weight",
        get("decoder/embeddings/weight")?,
        None,
        None,
    )?;
    for i in 0..hp.n_text_layer {
        let (ct, oa) = (format!("decoder/layer_{i}"), format!("decoder.blocks.{i}"));
        attention(
            &mut put,
            model,
            &format!("{ct}/self_attention"),
            &format!("{oa}.attn"),
            &format!("{oa}.attn_ln"),
        )?;
        cross_attention(
            &mut put,
            model,
            &format!("{ct}/attention"),
            &format!("{oa}.cross_attn"),
        )?;
        norm(
            &mut put,
            model,
            &format!("{ct}/attention/layer_norm"),
            &format!("{oa}.cross_attn_ln"),
        )?;
        mlp(&mut put, model, &ct, &oa)?;
    }
    norm(&mut put, model, "decoder/layer_norm", "decoder.ln")?;
    Ok(())
}

type Put<'p> = dyn FnMut(&str, &Variable, Option<(usize, usize)>, Option<Vec<usize>>) -> Result<(), ConvertError>
    + 'p;

/// Self-attention: CT2 fuses q, k, v into `linear_0` (rows q | k | v); OpenAI's key has no bias.
fn attention(
    put: &mut Put,
    model: &Ct2Model,
    ct: &str,
    oa: &str,
    ln: &str,
) -> Result<(), ConvertError> {
    let weight = model.get(&format!("{ct}/linear_0/weight"))?;
    let bias = model.get(&format!("{ct}/linear_0/bias"))?;
    let n = split_rows(weight, 3, ct)?;
    put(&format!("{oa}.query.weight"), weight, Some((0, n)), None)?;
    put(&format!("{oa}.query.bias"), bias, Some((0, n)), None)?;
    put(&format!("{oa}.key.weight"), weight, Some((n, n)), None)?;
    put(
        &format!("{oa}.value.weight"),
        weight,
        Some((2 * n, n)),
        None,
    )?;
    put(&format!("{oa}.value.bias"), bias, Some((2 * n, n)), None)?;
    linear(put, model, &format!("{ct}/linear_1"), &format!("{oa}.out"))?;
    norm(put, model, &format!("{ct}/layer_norm"), ln)
}

/// Cross-attention: query in `linear_0`, fused key | value in `linear_1`, output in `linear_2`.
fn cross_attention(
    put: &mut Put,
    model: &Ct2Model,
    ct: &str,
    oa: &str,
) -> Result<(), ConvertError> {
    linear(
        put,
        model,
        &format!("{ct}/linear_0"),
        &format!("{oa}.query"),
    )?;
    let weight = model.get(&format!("{ct}/linear_1/weight"))?;
    let bias = model.get(&format!("{ct}/linear_1/bias"))?;
    let n = split_rows(weight, 2, ct)?;
    put(&format!("{oa}.key.weight"), weight, Some((0, n)), None)?;
    put(&format!("{oa}.value.weight"), weight, Some((n, n)), None)?;
    put(&format!("{oa}.value.bias"), bias, Some((n, n)), None)?;
    linear(put, model, &format!("{ct}/linear_2"), &format!("{oa}.out"))
}

fn mlp(put: &mut Put, model: &Ct2Model, ct: &str, oa: &str) -> Result<(), ConvertError> {
    linear(
        put,
        model,
        &format!("{ct}/ffn/linear_0"),
        &format!("{oa}.mlp.0"),
    )?;
    linear(
        put,
        model,
        &format!("{ct}/ffn/linear_1"),
        &format!("{oa}.mlp.2"),
    )?;
    norm(
        put,
        model,
        &format!("{ct}/ffn/layer_norm"),
        &format!("{oa}.mlp_ln"),
    )
}

fn linear(put: &mut Put, model: &Ct2Model, ct: &str, oa: &str) -> Result<(), ConvertError> {
    put(
        &format!("{oa}.weight"),
        model.get(&format!("{ct}/weight"))?,
        None,
        None,
    )?;
    put(
        &format!("{oa}.bias"),
        model.get(&format!("{ct}/bias"))?,
        None,
        None,
    )
}

fn norm(put: &mut Put, model: &Ct2Model, ct: &str, oa: &str) -> Result<(), ConvertError> {
    put(
        &format!("{oa}.weight"),
        model.get(&format!("{ct}/gamma"))?,
        None,
        None,
    )?;
    put(
        &format!("{oa}.bias"),
        model.get(&format!("{ct}/beta"))?,
        None,
        None,
    )
}

/// Rows per part of a fused projection.
fn split_rows(weight: &Variable, parts: usize, name: &str) -> Result<usize, ConvertError> {
    match weight.shape.first() {
        Some(rows) if rows % parts == 0 => Ok(rows / parts),
        _ => Err(ConvertError(format!(
            "{name}: shape {:?} does not split in {parts}",
            weight.shape
        ))),
    }
}

/// Writes one tensor. `rows = (first, count)` takes a slice along the first dimension (for fused
/// projections); `reshape` replaces the shape (same element count).
fn tensor(
    w: &mut Writer,
    name: &str,
    var: &Variable,
    rows: Option<(usize, usize)>,
    reshape: Option<Vec<usize>>,
    weights: GgmlWeights,
) -> Result<(), ConvertError> {
    let mut shape = var.shape.clone();
    let mut data = var.data;
    if let Some((first, count)) = rows {
        let row_elements: usize = shape.iter().skip(1).product();
        let row_bytes = row_elements * var.dtype.size();
        data = data
            .get(first * row_bytes..(first + count) * row_bytes)
            .ok_or_else(|| {
                ConvertError(format!(
                    "{name}: rows {first}..{} out of range",
                    first + count
                ))
            })?;
        if let Some(dim) = shape.first_mut() {
            *dim = count;
        }
    }
    if let Some(new_shape) = reshape {
        shape = new_shape;
    }
    // Positional embeddings stay f32: whisper.cpp declares them so (they are added, not multiplied).
    let matrix =
        shape.len() >= 2 && !name.ends_with("positional_embedding") && !name.ends_with(".bias");
    // Quantized files keep the 3-D convolution kernels at f16, as whisper.cpp expects.
    let quantized = weights.blocks().filter(|(_, block, _)| {
        matrix && shape.len() == 2 && shape.last().is_some_and(|row| row % block == 0)
    });
    let half = matrix && quantized.is_none();
    let values = decode(var.dtype, data, name)?;
    w.i32(to_i32(shape.len())?)?;
    w.i32(to_i32(name.len())?)?;
    w.i32(match quantized {
        Some((type_id, _, _)) => type_id,
        None if half => TYPE_F16,
        None => TYPE_F32,
    })?;
    for dim in shape.iter().rev() {
        w.i32(to_i32(*dim)?)?;
    }
    w.raw(name.as_bytes())?;
    match (quantized, values) {
        (Some((_, _, quantize)), values) => {
            let floats: Vec<f32> = (0..values.len()).map(|i| values.get(i)).collect();
            w.raw(&quantize(&floats))?;
        }
        // Source already f16 and target f16: copy the bits, no rounding twice.
        (None, Values::F16(bits)) if half => w.raw(bits)?,
        (None, values) => {
            let mut buffer = Vec::with_capacity(values.len() * if half { 2 } else { 4 });
            for i in 0..values.len() {
                let value = values.get(i);
                if half {
                    buffer.extend_from_slice(&f16::from_f32(value).to_le_bytes());
                } else {
                    buffer.extend_from_slice(&value.to_le_bytes());
                }
            }
            w.raw(&buffer)?;
        }
    }
    Ok(())
}

enum Values<'a> {
    F16(&'a [u8]),
    Bf16(&'a [u8]),
    F32(&'a [u8]),
}

impl Values<'_> {
    fn len(&self) -> usize {
        match self {
            Self::F16(b) | Self::Bf16(b) => b.len() / 2,
            Self::F32(b) => b.len() / 4,
        }
    }

    fn get(&self, i: usize) -> f32 {
        match self {
            Self::F16(b) => f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32(),
            Self::Bf16(b) => bf16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32(),
            Self::F32(b) => {
                f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
            }
        }
    }
}

fn decode<'a>(dtype: DType, data: &'a [u8], name: &str) -> Result<Values<'a>, ConvertError> {
    match dtype {
        DType::F16 => Ok(Values::F16(data)),
        DType::BF16 => Ok(Values::Bf16(data)),
        DType::F32 => Ok(Values::F32(data)),
        other => Err(ConvertError(format!(
            "{name}: {other:?} weights (a quantized CTranslate2 model) are not supported; use an fp16/fp32 one"
        ))),
    }
}

/// `.tiktoken`: one `base64(token) rank` per line, ranks 0..n in order.
pub fn tiktoken_tokens(text: &[u8]) -> Result<Vec<Vec<u8>>, ConvertError> {
    use base64::Engine;
    let text = std::str::from_utf8(text)
        .map_err(|_| ConvertError("tokenizer file is not UTF-8".into()))?;
    let mut tokens = Vec::new();
    for (line_no, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |what: &str| ConvertError(format!("tokenizer line {}: {what}", line_no + 1));
        let (token, rank) = line
            .split_once(' ')
            .ok_or_else(|| bad("expected `base64 rank`"))?;
        let rank: usize = rank
            .trim()
            .parse()
            .map_err(|_| bad("rank is not a number"))?;
        if rank != tokens.len() {
            return Err(bad(&format!(
                "rank {rank} out of order (expected {})",
                tokens.len()
            )));
        }
        // multilingual.tiktoken has `=` for an empty token (Python's decoder accepts it): strip padding.
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|_| bad("bad base64"))?;
        tokens.push(bytes);
    }
    if tokens.is_empty() {
        return Err(ConvertError("tokenizer file has no tokens".into()));
    }
    Ok(tokens)
}

fn to_i32(value: impl TryInto<i32>) -> Result<i32, ConvertError> {
    value
        .try_into()
        .map_err(|_| ConvertError("a dimension does not fit in i32".into()))
}

struct Writer<'w> {
    out: &'w mut dyn Write,
    bytes: u64,
}

impl Writer<'_> {
    fn raw(&mut self, bytes: &[u8]) -> Result<(), ConvertError> {
        self.out
            .write_all(bytes)
            .map_err(|e| ConvertError(format!("cannot write the ggml file: {e}")))?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }
    fn i32(&mut self, value: i32) -> Result<(), ConvertError> {
        self.raw(&value.to_le_bytes())
    }
    fn u32(&mut self, value: u32) -> Result<(), ConvertError> {
        self.raw(&value.to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiktoken_parses_in_rank_order_and_rejects_gaps() {
        let tokens = tiktoken_tokens(b"IQ== 0\nIg== 1\n= 2\n").unwrap();
        assert_eq!(tokens, vec![b"!".to_vec(), b"\"".to_vec(), Vec::new()]);
        let error = tiktoken_tokens(b"IQ== 0\nIg== 2\n").unwrap_err();
        assert!(error.0.contains("line 2"), "{error}");
    }

    #[test]
    fn truncated_ct2_file_is_an_error_not_a_panic() {
        let mut bytes = 6u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&12u16.to_le_bytes());
        bytes.extend_from_slice(b"WhisperSpec\0");
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&1000u32.to_le_bytes()); // 1000 variables, none present
        let error = Ct2Model::parse(&bytes).unwrap_err();
        assert!(error.0.contains("truncated"), "{error}");
    }
}
