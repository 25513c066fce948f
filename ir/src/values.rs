//! Values the model's integer tensors held when it ran: what an op's kernel choice, work or
//! duration can depend on (MoE routing's `sort`, `histc` and `index`, embedding and gather
//! indices). Ingest reads them from the values file `traces/capture.py` writes beside the
//! Execution Trace and attaches each to the op input that read it; the plan fills the
//! replay's tensors with them instead of drawn values.
//!
//! Invariant: every input names an op of the graph and a blob of `blobs` whose length is
//! the element count of `dims` times the size of `dtype`; inputs are sorted by
//! (op, input, element). The verifier checks it.

use crate::{DType, OpId};
use serde::{Deserialize, Serialize};

/// One recorded input tensor of one op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedInput {
    pub op: OpId,
    /// The op's argument position.
    pub input: u32,
    /// Within a tensor list, the position among its tensors (absent entries of a
    /// `Tensor?[]` not counted); `None` for a tensor argument.
    pub element: Option<u32>,
    pub dtype: DType,
    pub dims: Vec<i64>,
    /// Index into [`RecordedValues::blobs`]: the elements in row-major order.
    pub blob: u32,
}

/// The recorded values of a graph; empty when ingest was given none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedValues {
    /// The file they came from (its name).
    pub source: String,
    /// Distinct contents: iterations that saw the same values share one blob.
    pub blobs: Vec<Vec<u8>>,
    pub inputs: Vec<RecordedInput>,
}

impl RecordedValues {
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// The inputs recorded for `op` (a contiguous run, as inputs are sorted by op).
    pub fn of_op(&self, op: OpId) -> &[RecordedInput] {
        let lo = self.inputs.partition_point(|r| r.op < op);
        let hi = self.inputs.partition_point(|r| r.op <= op);
        &self.inputs[lo..hi]
    }

    /// Bytes a blob must hold for `dims` of `dtype`, or `None` when that overflows or the
    /// type has no fixed size.
    pub fn expected_bytes(dtype: DType, dims: &[i64]) -> Option<u64> {
        let mut n: u64 = 1;
        for &d in dims {
            n = n.checked_mul(u64::try_from(d).ok()?)?;
        }
        let size = u64::from(dtype.size_bytes());
        (size > 0).then(|| n.checked_mul(size)).flatten()
    }
}

/// The blobs still named by `refs`, in the order first named, each ref renumbered to its
/// blob's new index: what is left when some tensors that named blobs were dropped.
pub fn keep_named<'a>(
    blobs: &[Vec<u8>],
    refs: impl IntoIterator<Item = &'a mut u32>,
) -> Vec<Vec<u8>> {
    let mut new_index: Vec<Option<u32>> = vec![None; blobs.len()];
    let mut kept = Vec::new();
    for r in refs {
        let b = *r as usize;
        *r = *new_index[b].get_or_insert_with(|| {
            kept.push(blobs[b].clone());
            (kept.len() - 1) as u32
        });
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_of_an_op_are_its_run() {
        let r = |op: u32, input: u32| RecordedInput {
            op: OpId(op),
            input,
            element: None,
            dtype: DType::I64,
            dims: vec![2],
            blob: 0,
        };
        let v = RecordedValues {
            source: "x".into(),
            blobs: vec![vec![0; 16]],
            inputs: vec![r(1, 0), r(3, 0), r(3, 1), r(7, 2)],
        };
        assert_eq!(v.of_op(OpId(3)).len(), 2);
        assert_eq!(v.of_op(OpId(2)).len(), 0);
        assert_eq!(v.of_op(OpId(7))[0].input, 2);
        assert_eq!(
            RecordedValues::expected_bytes(DType::I32, &[4, 3]),
            Some(48)
        );
        assert_eq!(RecordedValues::expected_bytes(DType::I64, &[-1]), None);
    }
}
