//! CPU operators (aten ops and user annotations) that launched GPU work, with the argument
//! specs the profiler recorded. Invariant: an op's `parent`, when present, encloses it in
//! time on the same thread and has a smaller [`OpId`].

use crate::{DType, StrId};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct OpId(pub u32);

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op{}", self.0)
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum OpKind {
    /// A `cpu_op` (modern) or `Operator` (legacy 2021) event: an aten op or autograd node.
    Op,
    /// A `user_annotation` range (record_function, `ProfilerStep#N`, `nccl:all_reduce`).
    Annotation,
}

/// Where an op's argument specs came from.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum ArgsSource {
    /// The trace had no shapes for this op.
    None,
    /// Kineto "Input Dims"/"Input Strides"/"Input type"/"Concrete Inputs".
    Trace,
    /// Merged from a PyTorch Execution Trace by record-function id.
    ExecutionTrace,
    /// Merged from a kc JSONL shape log.
    ShapeLog,
}

/// One tensor argument: sizes, strides (empty when not recorded) and element type.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct TensorSpec {
    pub dims: Vec<i64>,
    pub strides: Vec<i64>,
    pub dtype: DType,
}

impl TensorSpec {
    pub fn numel(&self) -> i64 {
        self.dims.iter().product()
    }

    /// Row-major contiguous strides for `dims`.
    pub fn contiguous_strides(dims: &[i64]) -> Vec<i64> {
        let mut s = vec![1i64; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * dims[i + 1].max(1);
        }
        s
    }

    /// Strides as recorded, or contiguous ones when the trace recorded none.
    pub fn effective_strides(&self) -> Vec<i64> {
        if self.strides.len() == self.dims.len() {
            self.strides.clone()
        } else {
            Self::contiguous_strides(&self.dims)
        }
    }

    /// Bytes spanned by the tensor in memory (largest reachable offset + 1 element).
    pub fn storage_bytes(&self) -> u64 {
        Self::storage_elems(&self.dims, &self.effective_strides())
            * u64::from(self.dtype.size_bytes().max(1))
    }

    /// Elements of the storage a view with these sizes and strides reaches (0 when a
    /// dimension is empty; 1 for a 0-dim tensor).
    /// Saturates at `u64::MAX` where the exact figure does not fit (readers refuse such
    /// tensors with [`TensorSpec::checked_storage_elems`] first).
    pub fn storage_elems(dims: &[i64], strides: &[i64]) -> u64 {
        Self::checked_storage_elems(dims, strides).unwrap_or(u64::MAX)
    }

    /// [`TensorSpec::storage_elems`], or `None` when a size is negative or the span does
    /// not fit in an `i64` (a corrupt or hostile stride).
    pub fn checked_storage_elems(dims: &[i64], strides: &[i64]) -> Option<u64> {
        if dims.contains(&0) {
            return Some(0);
        }
        let mut last: i64 = 0;
        for (d, s) in dims.iter().zip(strides) {
            if *d < 0 {
                return None;
            }
            let term = (d - 1).max(0).checked_mul(s.checked_abs()?)?;
            last = last.checked_add(term)?;
        }
        u64::try_from(last.checked_add(1)?).ok()
    }
}

/// One argument of a recorded op.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum OpArg {
    Tensor(TensorSpec),
    TensorList(Vec<TensorSpec>),
    /// A scalar with its recorded text ("1", "False", "-1"); empty when not recorded.
    Scalar {
        ty: String,
        value: String,
    },
    /// A list of scalars ("[0, 1]"), kept as recorded.
    ScalarList {
        ty: String,
        value: String,
    },
    /// An argument the profiler recorded as absent (`None`, an undefined tensor).
    None,
    /// Anything else, with its recorded type name.
    Other {
        ty: String,
    },
    /// A list of optional tensors as an Execution Trace records one (`Tensor?[]`, e.g.
    /// `index`'s indices): `None` where an entry holds no tensor. (Appended last, so
    /// graphs written before it decode unchanged.)
    OptionalTensorList(Vec<Option<TensorSpec>>),
}

impl OpArg {
    /// The tensors this argument passes, in order (a list's present entries).
    pub fn tensors(&self) -> Vec<&TensorSpec> {
        match self {
            OpArg::Tensor(t) => vec![t],
            OpArg::TensorList(ts) => ts.iter().collect(),
            OpArg::OptionalTensorList(ts) => ts.iter().flatten().collect(),
            _ => Vec::new(),
        }
    }

    pub fn tensor(&self) -> Option<&TensorSpec> {
        match self {
            OpArg::Tensor(t) => Some(t),
            _ => None,
        }
    }

    pub fn scalar_value(&self) -> Option<&str> {
        match self {
            OpArg::Scalar { value, .. } if !value.is_empty() => Some(value),
            _ => None,
        }
    }
}

/// A CPU-side operator that enclosed (and so issued) GPU launches.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CpuOp {
    pub name: StrId,
    pub kind: OpKind,
    pub rank: u32,
    /// Host thread id as recorded (string tids are hashed to a number by ingest).
    pub tid: u64,
    pub start_ns: i64,
    pub dur_ns: i64,
    /// Kineto "External id", the key GPU activities use to name their op.
    pub external_id: u64,
    /// "Record function id", the key an Execution Trace uses (`rf_id`).
    pub record_function_id: Option<u64>,
    pub sequence_number: Option<i64>,
    /// The innermost op that encloses this one on its thread.
    pub parent: Option<OpId>,
    /// Index into [`crate::KernelGraph::arg_lists`]; 0 is the empty list.
    pub args: u32,
    pub args_source: ArgsSource,
}

impl CpuOp {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_covers_every_view_element() {
        // An expanded view (stride 0) and a permuted one reach less and more than numel.
        assert_eq!(
            TensorSpec::storage_elems(&[16, 5, 5], &[5, 0, 1]),
            1 + 15 * 5 + 4
        );
        assert_eq!(
            TensorSpec::storage_elems(&[1, 5, 16, 64], &[5120, 64, 320, 1]),
            1 + 4 * 64 + 15 * 320 + 63
        );
        assert_eq!(TensorSpec::storage_elems(&[0], &[1]), 0);
        // A stride that overflows is refused, never wrapped into a small span.
        assert_eq!(
            TensorSpec::checked_storage_elems(&[3, 3], &[6226278986761232451, 1]),
            None
        );
        assert_eq!(TensorSpec::checked_storage_elems(&[2], &[i64::MIN]), None);
        assert_eq!(TensorSpec::checked_storage_elems(&[-3], &[1]), None);
        assert_eq!(TensorSpec::storage_elems(&[], &[]), 1);
    }
}
