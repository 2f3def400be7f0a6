//! Reader for CTranslate2's `model.bin` (binary versions 2 to 6), enough for faster-whisper weights.
//!
//! Layout (little-endian), as written by ctranslate2's `model_spec.py` and read by `src/models/model.cc`:
//! u32 binary version; v≥2: string spec name, u32 spec revision; u32 variable count; per variable: string
//! name, u8 rank, rank × u32 dims, then v≥4: u8 dtype id + u32 byte count (v<4: u8 item size + u32 item
//! count), the data; v≥3: u32 alias count, then (alias, target) string pairs. Strings are u16 length
//! (including a trailing NUL) + bytes.

use std::collections::HashMap;

use super::ConvertError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
    I8,
    I16,
    I32,
    F16,
    BF16,
}

impl DType {
    fn from_id(id: u8) -> Option<Self> {
        Some(match id {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::BF16,
            _ => return None,
        })
    }

    /// Binary versions < 4 only store the item size; CTranslate2 maps it back like this.
    fn from_item_size(size: u8) -> Option<Self> {
        Some(match size {
            4 => Self::F32,
            2 => Self::F16,
            1 => Self::I8,
            _ => return None,
        })
    }

    pub fn size(self) -> usize {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::BF16 | Self::I16 => 2,
            Self::I8 => 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Variable<'a> {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub data: &'a [u8],
}

impl Variable<'_> {
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Scalars such as `encoder/num_heads` (stored as int8/int16/int32 depending on the converter).
    pub fn as_int(&self) -> Option<i64> {
        let d = self.data;
        Some(match (self.dtype, d.len()) {
            (DType::I8, 1) => i64::from(d[0] as i8),
            (DType::I16, 2) => i64::from(i16::from_le_bytes([d[0], d[1]])),
            (DType::I32, 4) => i64::from(i32::from_le_bytes([d[0], d[1], d[2], d[3]])),
            _ => return None,
        })
    }
}

#[derive(Debug)]
pub struct Ct2Model<'a> {
    pub spec: String,
    pub variables: HashMap<String, Variable<'a>>,
}

impl<'a> Ct2Model<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ConvertError> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.u32()?;
        if !(1..=6).contains(&version) {
            return Err(ConvertError(format!(
                "unsupported CTranslate2 binary version {version}"
            )));
        }
        let spec = if version >= 2 {
            let spec = r.string()?;
            r.u32()?; // spec revision: the variable names below are what we depend on
            spec
        } else {
            String::new()
        };
        let count = r.u32()?;
        let mut variables = HashMap::with_capacity(count as usize);
        for _ in 0..count {
            let name = r.string()?;
            let rank = r.u8()? as usize;
            let shape = (0..rank)
                .map(|_| r.u32().map(|d| d as usize))
                .collect::<Result<Vec<_>, _>>()?;
            let (dtype, bytes_len) = if version >= 4 {
                let id = r.u8()?;
                let dtype = DType::from_id(id)
                    .ok_or_else(|| ConvertError(format!("{name}: unknown dtype id {id}")))?;
                (dtype, r.u32()? as usize)
            } else {
                let size = r.u8()?;
                let dtype = DType::from_item_size(size)
                    .ok_or_else(|| ConvertError(format!("{name}: unknown item size {size}")))?;
                (dtype, r.u32()? as usize * usize::from(size))
            };
            let data = r.take(bytes_len)?;
            let variable = Variable { shape, dtype, data };
            if variable.elements() * dtype.size() != bytes_len {
                return Err(ConvertError(format!(
                    "{name}: payload of {bytes_len} bytes does not fit its shape"
                )));
            }
            variables.insert(name, variable);
        }
        if version >= 3 {
            let aliases = r.u32()?;
            for _ in 0..aliases {
                let alias = r.string()?;
                let target = r.string()?;
                if let Some(variable) = variables.get(&target).cloned() {
                    variables.insert(alias, variable);
                }
            }
        }
        Ok(Self { spec, variables })
    }

    pub fn get(&self, name: &str) -> Result<&Variable<'a>, ConvertError> {
        self.variables
            .get(name)
            .ok_or_else(|| ConvertError(format!("variable `{name}` is missing")))
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ConvertError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                ConvertError(format!(
                    "file ends at byte {} but {n} more bytes were expected (truncated?)",
                    self.at
                ))
            })?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u8(&mut self) -> Result<u8, ConvertError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, ConvertError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn string(&mut self) -> Result<String, ConvertError> {
        let b = self.take(2)?;
        let len = usize::from(u16::from_le_bytes([b[0], b[1]]));
        let raw = self.take(len)?;
        let text = raw.strip_suffix(&[0]).unwrap_or(raw);
        String::from_utf8(text.to_vec())
            .map_err(|_| ConvertError(format!("non-UTF-8 name at byte {}", self.at)))
    }
}
