//! Reads a values file: the values the model's integer tensors held when it ran, as
//! `traces/capture.py` records them beside the Execution Trace (`NAME.values.bin`, format in
//! docs/FORMATS.md), and attaches each to the op input that read it.
//!
//! Layout: the 8-byte magic `KCVALUE1`, the header's length as a little-endian u64, the
//! header (JSON: `tensors`, each naming an Execution Trace node id, the input's argument
//! position, its element within a tensor list, dtype, shape, and its bytes' offset and length
//! in the data that follows), then the data.
//!
//! Invariant: `parse` returns only entries whose bytes lie inside the data and hold exactly
//! their shape's elements of their dtype, or one error naming the file and the byte offset
//! (header) or entry index (tensors) of the problem; it never panics and never allocates
//! more than the file holds. `attach` changes nothing but `KernelGraph::recorded_values`.

use crate::diag::Diagnostics;
use kc_ir::{DType, KernelGraph, OpArg, OpId, RecordedInput, RecordedValues};
use serde::Deserialize;
use std::collections::HashMap;

pub const VALUES_MAGIC: &[u8; 8] = b"KCVALUE1";

/// The largest values file kc reads (indices of a model step are far smaller; capture.py
/// bounds what it writes well below this).
pub const MAX_VALUES_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    #[error("{path}: byte {offset}: {message}")]
    Header {
        path: String,
        offset: u64,
        message: String,
    },
    #[error("{path}: tensor entry {index}: {message}")]
    Entry {
        path: String,
        index: usize,
        message: String,
    },
}

#[derive(Deserialize)]
struct Header {
    format: String,
    tensors: Vec<EntryRecord>,
}

#[derive(Deserialize)]
struct EntryRecord {
    node: u64,
    input: u32,
    element: Option<u32>,
    dtype: String,
    shape: Vec<i64>,
    offset: u64,
    bytes: u64,
}

/// One tensor of a values file, keyed by the Execution Trace node that read it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueEntry {
    pub node: u64,
    pub input: u32,
    pub element: Option<u32>,
    pub dtype: DType,
    pub dims: Vec<i64>,
    /// Index into [`ValuesFile::blobs`].
    pub blob: u32,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValuesFile {
    pub entries: Vec<ValueEntry>,
    pub blobs: Vec<Vec<u8>>,
}

/// The dtype names capture.py writes (PyTorch's, without `torch.`): integer and boolean
/// types only, the values that steer kernels.
fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "int64" => DType::I64,
        "int32" => DType::I32,
        "int16" => DType::I16,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "bool" => DType::Bool,
        _ => return None,
    })
}

/// Parses a values file's bytes (`path` names it in errors).
pub fn parse(bytes: &[u8], path: &str) -> Result<ValuesFile, ValuesError> {
    let header_err = |offset: u64, message: String| ValuesError::Header {
        path: path.to_string(),
        offset,
        message,
    };
    if bytes.len() < 16 || &bytes[..8] != VALUES_MAGIC {
        return Err(header_err(
            0,
            "not a kc values file (it starts with the magic KCVALUE1, as traces/capture.py writes it)"
                .into(),
        ));
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let rest = (bytes.len() - 16) as u64;
    if len > rest {
        return Err(header_err(
            8,
            format!("header length {len} runs past the end of the file ({rest} bytes follow)"),
        ));
    }
    let header_end = 16 + len as usize;
    let header: Header = serde_json::from_slice(&bytes[16..header_end]).map_err(|e| {
        header_err(
            16 + e.column() as u64,
            format!("header is not the expected JSON: {e}"),
        )
    })?;
    if header.format != "kc values 1" {
        return Err(header_err(
            16,
            format!("format {:?}; this kc reads \"kc values 1\"", header.format),
        ));
    }
    let data = &bytes[header_end..];
    let mut blob_of: HashMap<(u64, u64), u32> = HashMap::new();
    let mut out = ValuesFile::default();
    for (index, e) in header.tensors.into_iter().enumerate() {
        let bad = |message: String| ValuesError::Entry {
            path: path.to_string(),
            index,
            message,
        };
        let dtype = dtype_of(&e.dtype).ok_or_else(|| {
            bad(format!(
                "dtype {:?} is not an integer or boolean type",
                e.dtype
            ))
        })?;
        let want = RecordedValues::expected_bytes(dtype, &e.shape)
            .ok_or_else(|| bad(format!("shape {:?} is not a tensor's shape", e.shape)))?;
        if want != e.bytes {
            return Err(bad(format!(
                "{} bytes for shape {:?} of {}, which holds {want}",
                e.bytes, e.shape, e.dtype
            )));
        }
        let end = e
            .offset
            .checked_add(e.bytes)
            .filter(|&end| end <= data.len() as u64);
        let Some(end) = end else {
            return Err(bad(format!(
                "bytes {}..{}+{} lie outside the {} bytes of data",
                e.offset,
                e.offset,
                e.bytes,
                data.len()
            )));
        };
        let blob = *blob_of.entry((e.offset, e.bytes)).or_insert_with(|| {
            out.blobs
                .push(data[e.offset as usize..end as usize].to_vec());
            (out.blobs.len() - 1) as u32
        });
        out.entries.push(ValueEntry {
            node: e.node,
            input: e.input,
            element: e.element,
            dtype,
            dims: e.shape,
            blob,
        });
    }
    Ok(out)
}

/// The tensor an op's recorded argument list holds at (`input`, `element`).
fn recorded_tensor(args: &[OpArg], input: u32, element: Option<u32>) -> Option<&kc_ir::TensorSpec> {
    match (args.get(input as usize)?, element) {
        (OpArg::Tensor(t), None) => Some(t),
        (OpArg::TensorList(l), Some(k)) => l.get(k as usize),
        (OpArg::OptionalTensorList(l), Some(k)) => l.iter().flatten().nth(k as usize),
        _ => None,
    }
}

/// Attaches `file`'s tensors to the graph's ops: an entry goes to the op whose Execution
/// Trace node (`et_node_of_op`) recorded it, when the op's own argument at that position has
/// the same shape and dtype. Entries that find no such op are counted in diagnostics.
/// Returns how many inputs received values.
pub fn attach(
    g: &mut KernelGraph,
    file: ValuesFile,
    et_node_of_op: &HashMap<u64, OpId>,
    source: &str,
    diags: &mut Diagnostics,
) -> usize {
    let (mut no_op, mut mismatched) = (0usize, 0usize);
    let mut inputs = Vec::new();
    for e in &file.entries {
        let Some(&op) = et_node_of_op.get(&e.node) else {
            no_op += 1;
            continue;
        };
        let args = g.args(op);
        match recorded_tensor(args, e.input, e.element) {
            Some(t) if t.dims == e.dims && t.dtype == e.dtype => inputs.push(RecordedInput {
                op,
                input: e.input,
                element: e.element,
                dtype: e.dtype,
                dims: e.dims.clone(),
                blob: e.blob,
            }),
            _ => mismatched += 1,
        }
    }
    if no_op > 0 {
        diags.add(
            "values_unmatched",
            source.to_string(),
            format!("{no_op} recorded tensors name Execution Trace nodes no op of this trace was matched to (by record-function id)"),
        );
    }
    if mismatched > 0 {
        diags.add(
            "values_mismatched",
            source.to_string(),
            format!("{mismatched} recorded tensors differ in shape or dtype from the argument their op recorded: not used"),
        );
    }
    inputs.sort_by_key(|r| (r.op, r.input, r.element));
    inputs.dedup_by_key(|r| (r.op, r.input, r.element));
    // Keep only the blobs still named.
    let blobs = kc_ir::values::keep_named(&file.blobs, inputs.iter_mut().map(|r| &mut r.blob));
    let n = inputs.len();
    g.recorded_values = RecordedValues {
        source: source.to_string(),
        blobs,
        inputs,
    };
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One tensor of a values file: node, input, element, dtype, shape and bytes.
    pub(crate) type Tensor<'a> = (u64, u32, Option<u32>, &'a str, Vec<i64>, Vec<u8>);

    /// A values file as capture.py writes it.
    pub(crate) fn file(tensors: &[Tensor<'_>]) -> Vec<u8> {
        let mut data = Vec::new();
        let entries: Vec<serde_json::Value> = tensors
            .iter()
            .map(|(node, input, element, dtype, shape, bytes)| {
                let offset = data.len();
                data.extend_from_slice(bytes);
                serde_json::json!({"node": node, "input": input, "element": element,
                    "dtype": dtype, "shape": shape, "offset": offset, "bytes": bytes.len()})
            })
            .collect();
        let header = serde_json::json!({"format": "kc values 1", "tensors": entries}).to_string();
        let mut out = VALUES_MAGIC.to_vec();
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&data);
        out
    }

    fn i64s(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn reads_what_capture_writes_and_shares_equal_blobs() {
        let b = file(&[
            (1041, 0, None, "int64", vec![4], i64s(&[3, 0, 7, 1])),
            (
                1042,
                1,
                Some(0),
                "int32",
                vec![2],
                vec![1, 0, 0, 0, 2, 0, 0, 0],
            ),
        ]);
        let f = parse(&b, "x.values.bin").unwrap();
        assert_eq!(f.entries.len(), 2);
        assert_eq!(f.entries[0].dtype, DType::I64);
        assert_eq!(f.entries[1].element, Some(0));
        assert_eq!(f.blobs[0], i64s(&[3, 0, 7, 1]));
    }

    #[test]
    fn refuses_bad_files_naming_where() {
        let e = parse(b"not a values file at all", "v")
            .unwrap_err()
            .to_string();
        assert!(e.contains("v: byte 0"), "{e}");
        let mut b = file(&[(1, 0, None, "int64", vec![4], i64s(&[1, 2, 3, 4]))]);
        b.truncate(b.len() - 8);
        let e = parse(&b, "v").unwrap_err().to_string();
        assert!(e.contains("tensor entry 0") && e.contains("outside"), "{e}");
        let b = file(&[(1, 0, None, "float32", vec![1], vec![0; 4])]);
        let e = parse(&b, "v").unwrap_err().to_string();
        assert!(e.contains("not an integer"), "{e}");
        let b = file(&[(1, 0, None, "int64", vec![3], i64s(&[1, 2]))]);
        let e = parse(&b, "v").unwrap_err().to_string();
        assert!(e.contains("holds 24"), "{e}");
        let mut b = file(&[]);
        b[8] = 0xff;
        let e = parse(&b, "v").unwrap_err().to_string();
        assert!(e.contains("byte 8"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_bytes(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
                                     len in 0u64..400) {
            let mut b = VALUES_MAGIC.to_vec();
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&tail);
            let _ = parse(&b, "p");
            let _ = parse(&tail, "p");
        }

        #[test]
        fn any_offsets_are_checked(
            // Inside and just past the 40 data bytes, and where offset + bytes overflows.
            offset in proptest::prop_oneof![0u64..64, (u64::MAX - 64)..u64::MAX],
            shape in 0i64..8,
            // Mostly the shape's own byte count, sometimes not.
            wrong in proptest::prop_oneof![3 => proptest::strategy::Just(0u64), 1 => 1u64..8],
        ) {
            let bytes = 8 * shape as u64 + wrong;
            let header = serde_json::json!({"format": "kc values 1", "tensors": [
                {"node": 1, "input": 0, "element": null, "dtype": "int64", "shape": [shape],
                 "offset": offset, "bytes": bytes}]}).to_string();
            let mut b = VALUES_MAGIC.to_vec();
            b.extend_from_slice(&(header.len() as u64).to_le_bytes());
            b.extend_from_slice(header.as_bytes());
            b.extend_from_slice(&[0u8; 40]);
            let fits = wrong == 0 && offset.checked_add(bytes).is_some_and(|e| e <= 40);
            match parse(&b, "p") {
                Ok(f) => {
                    proptest::prop_assert!(fits);
                    proptest::prop_assert_eq!(f.blobs[0].len() as u64, bytes);
                }
                Err(_) => proptest::prop_assert!(!fits),
            }
        }
    }
}
