//! Just enough NumPy: a little-endian f32 C-order array from a `.npz` (zip of `.npy` files).

use std::io::{Cursor, Read};

use super::ConvertError;

pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

pub fn npz_f32(npz: &[u8], key: &str) -> Result<Array, ConvertError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(npz))
        .map_err(|e| ConvertError(format!("mel filters: not an npz file: {e}")))?;
    let member = format!("{key}.npy");
    let mut entry = zip
        .by_name(&member)
        .map_err(|_| ConvertError(format!("mel filters: npz has no `{member}`")))?;
    let mut bytes = Vec::new();
    entry
        .read_to_end(&mut bytes)
        .map_err(|e| ConvertError(format!("mel filters: cannot read `{member}`: {e}")))?;
    npy_f32(&bytes).map_err(|e| ConvertError(format!("mel filters `{member}`: {}", e.0)))
}

/// `\x93NUMPY`, major, minor, header length (u16 for v1, u32 for v2+), a Python dict literal, the data.
pub fn npy_f32(bytes: &[u8]) -> Result<Array, ConvertError> {
    let bad = |m: &str| ConvertError(m.to_string());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not an .npy file"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        _ if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err(bad("truncated header")),
    };
    let header = bytes
        .get(start..start + header_len)
        .ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("header is not text"))?;
    if !header.contains("'descr': '<f4'") {
        return Err(bad(&format!(
            "only little-endian float32 is supported, header: {header}"
        )));
    }
    if header.contains("'fortran_order': True") {
        return Err(bad("Fortran-order arrays are not supported"));
    }
    let shape_text = header
        .split("'shape':")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .map(|s| s.trim().trim_start_matches('('))
        .ok_or_else(|| bad("header has no shape"))?;
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad("bad shape")))
        .collect::<Result<Vec<_>, _>>()?;
    let body = &bytes[start + header_len..];
    let count: usize = shape.iter().product();
    if body.len() != count * 4 {
        return Err(bad(&format!(
            "{} data bytes for shape {shape:?}",
            body.len()
        )));
    }
    let data = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Array { shape, data })
}
