//! Element types as PyTorch names them in traces ("c10::Half", "float", "long int",
//! "Tensor(c10::BFloat16)" in Execution Traces) and in kernel names. Invariant: every
//! dtype has a fixed element size, and parsing never fails: unknown names map to
//! [`DType::Unknown`].

use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, PartialOrd, Ord)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
    C64,
    C128,
    Unknown,
}

impl DType {
    /// Parses a dtype as written in Kineto "Input type", Execution Trace types and
    /// collective metadata. Returns `None` for non-tensor types ("Scalar", "" ...).
    pub fn from_torch_name(name: &str) -> Option<DType> {
        let n = name.trim();
        let n = n
            .strip_prefix("Tensor(")
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(n);
        let n = n.strip_prefix("c10::").unwrap_or(n);
        Some(match n {
            "double" | "Double" | "float64" => DType::F64,
            "float" | "Float" | "float32" => DType::F32,
            "Half" | "half" | "float16" => DType::F16,
            "BFloat16" | "bfloat16" => DType::BF16,
            "Float8_e4m3fn" | "Float8_e4m3fnuz" | "float8_e4m3fn" => DType::F8E4M3,
            "Float8_e5m2" | "Float8_e5m2fnuz" | "float8_e5m2" => DType::F8E5M2,
            "long int" | "long" | "Long" | "int64_t" | "long long" | "int64" => DType::I64,
            "int" | "Int" | "int32" | "int32_t" => DType::I32,
            "short int" | "short" | "Short" | "int16" => DType::I16,
            "signed char" | "Char" | "int8" => DType::I8,
            "unsigned char" | "Byte" | "uint8" => DType::U8,
            "bool" | "Bool" => DType::Bool,
            "complex<float>" | "ComplexFloat" => DType::C64,
            "complex<double>" | "ComplexDouble" => DType::C128,
            _ => return None,
        })
    }

    /// Bytes per element (0 for unknown).
    pub fn size_bytes(self) -> u32 {
        match self {
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::C128 => 16,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::U8 | DType::Bool => 1,
            DType::Unknown => 0,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F64 | DType::F32 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2
        )
    }

    /// Short stable name used by the text form and reports.
    pub fn short(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::C128 => "c128",
            DType::Unknown => "?",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_names_traces_use() {
        assert_eq!(DType::from_torch_name("c10::Half"), Some(DType::F16));
        assert_eq!(DType::from_torch_name("long int"), Some(DType::I64));
        assert_eq!(
            DType::from_torch_name("Tensor(c10::BFloat16)"),
            Some(DType::BF16)
        );
        assert_eq!(DType::from_torch_name("float"), Some(DType::F32));
        assert_eq!(DType::from_torch_name("Scalar"), None);
        assert_eq!(DType::BF16.size_bytes(), 2);
    }
}
