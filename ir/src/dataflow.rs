//! Tensor identities and the memory image of a replay. Ingest records, per op, which
//! storage each tensor argument and result lives in (from an Execution Trace: storage id,
//! element offset, extent); lowering turns that into [`Dataflow`]: every operand of every
//! unit invocation gets a [`Place`] in a [`Storage`], so that a producer's result is its
//! consumers' input and a weight read by eight layers is eight storages, as in the model.
//!
//! Invariant: when `Dataflow::source` is not `None`, `instances` has one entry per unit
//! instance of the graph, each with one operand place per [`UnitParams::operands`] entry of
//! its unit, and every place names a storage of `storages` that holds it
//! (`offset_bytes + operand bytes <= storage bytes`); the verifier checks this.

use crate::{OpId, UnitParams};
use serde::{Deserialize, Serialize};

/// One tensor as an Execution Trace names it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct TensorRef {
    /// The trace's storage id. PyTorch derives it from the storage's data pointer, so a
    /// block the caching allocator hands out again keeps its id: ids are addresses.
    pub storage: u64,
    pub offset_bytes: u64,
    /// Bytes from the tensor's first element to one past its furthest (sizes and strides).
    pub span_bytes: u64,
    /// Floating-point data (integer and boolean tensors hold indices and masks).
    pub float: bool,
    pub on_device: bool,
}

/// The tensors of one argument or result position.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum ArgRefs {
    None,
    One(TensorRef),
    List(Vec<TensorRef>),
}

impl ArgRefs {
    pub fn tensors(&self) -> &[TensorRef] {
        match self {
            ArgRefs::None => &[],
            ArgRefs::One(t) => std::slice::from_ref(t),
            ArgRefs::List(v) => v,
        }
    }
}

/// The tensors an op read and produced, by argument position.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct OpTensors {
    pub op: OpId,
    pub inputs: Vec<ArgRefs>,
    pub outputs: Vec<ArgRefs>,
}

/// How the dataflow was derived.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
pub enum DataflowSource {
    /// Not derived (a graph lowered before dataflow existed, or nothing to place).
    #[default]
    None,
    /// Exact: storages and offsets recorded by an Execution Trace of the same run.
    ExecutionTrace,
    /// A documented heuristic over shapes and stream order (no tensor identities).
    Heuristic,
}

impl DataflowSource {
    pub fn as_str(self) -> &'static str {
        match self {
            DataflowSource::None => "none",
            DataflowSource::ExecutionTrace => "execution trace",
            DataflowSource::Heuristic => "heuristic",
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum StorageKind {
    /// Read but never written by the replayed work: weights, constants, model inputs. It
    /// keeps its memory for the whole replay.
    Parameter,
    /// Written by some replayed operation; it may share memory with storages whose
    /// lifetimes do not overlap.
    Activation,
}

impl StorageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StorageKind::Parameter => "parameter",
            StorageKind::Activation => "activation",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Storage {
    pub kind: StorageKind,
    /// The furthest byte any operand placed in it reaches.
    pub bytes: u64,
}

/// Where one operand lives.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Place {
    pub storage: u32,
    pub offset_bytes: u64,
}

/// The places of one unit instance's operands (`None`: the operand keeps a private
/// buffer, e.g. host memory or integer data the replay must not overwrite) and of the
/// results a tier-3 op allocates (written through its out variant).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
pub struct InstancePlaces {
    pub operands: Vec<Option<Place>>,
    pub outputs: Vec<Option<Place>>,
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
pub struct Dataflow {
    pub source: DataflowSource,
    pub storages: Vec<Storage>,
    /// Parallel to [`crate::KernelGraph::instances`].
    pub instances: Vec<InstancePlaces>,
}

/// Where an operand lives when it is not placed in a storage.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum OperandMemory {
    Device,
    PinnedHost,
}

/// One memory operand of a unit's call, in the order the plan gives them buffers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Operand {
    /// Bytes the call can touch from the operand's start.
    pub bytes: u64,
    pub memory: OperandMemory,
    /// The call writes it (a copy's destination, a GEMM's C, an in-place op's self).
    pub writes: bool,
    /// Floating-point data; `None` when the call does not say (copies, memsets).
    pub float: Option<bool>,
}

/// Elements a column-major `rows x cols` operand with leading dimension `ld` spans, over
/// `batch` matrices `stride` apart.
pub fn matrix_elems(rows: i64, cols: i64, ld: i64, batch: i64, stride: i64) -> u64 {
    if rows <= 0 || cols <= 0 {
        return 0;
    }
    let one = ld.max(rows) * (cols - 1) + rows;
    (one + stride.max(0) * (batch - 1).max(0)) as u64
}

impl UnitParams {
    /// The call's memory operands: copy source then destination; memset destination; GEMM
    /// A, B, C and the epilogue's bias; an op's tensors in argument order (lists
    /// flattened); a compiled kernel's tensor arguments in parameter order. Collectives and
    /// unreplayable units have none here.
    pub fn operands(&self, op_name: &str) -> Vec<Operand> {
        use crate::{GemmEpilogue, MemcpyKind, Transpose};
        let dev = |bytes: u64, writes: bool, float: Option<bool>| Operand {
            bytes,
            memory: OperandMemory::Device,
            writes,
            float,
        };
        match self {
            UnitParams::Memcpy { kind, bytes } => {
                let (src, dst) = match kind {
                    MemcpyKind::HtoD => (OperandMemory::PinnedHost, OperandMemory::Device),
                    MemcpyKind::DtoH => (OperandMemory::Device, OperandMemory::PinnedHost),
                    MemcpyKind::HtoH => (OperandMemory::PinnedHost, OperandMemory::PinnedHost),
                    _ => (OperandMemory::Device, OperandMemory::Device),
                };
                vec![
                    Operand {
                        bytes: *bytes,
                        memory: src,
                        writes: false,
                        float: None,
                    },
                    Operand {
                        bytes: *bytes,
                        memory: dst,
                        writes: true,
                        float: None,
                    },
                ]
            }
            UnitParams::Memset { bytes, .. } => vec![dev(*bytes, true, None)],
            UnitParams::Gemm(c) => {
                let (arows, acols) = if c.transa == Transpose::N {
                    (c.m, c.k)
                } else {
                    (c.k, c.m)
                };
                let (brows, bcols) = if c.transb == Transpose::N {
                    (c.k, c.n)
                } else {
                    (c.n, c.k)
                };
                let sz = |d: crate::DType| u64::from(d.size_bytes().max(1));
                let mut v = vec![
                    dev(
                        matrix_elems(arows, acols, c.lda, c.batch, c.stride_a) * sz(c.a_type),
                        false,
                        Some(c.a_type.is_float()),
                    ),
                    dev(
                        matrix_elems(brows, bcols, c.ldb, c.batch, c.stride_b) * sz(c.b_type),
                        false,
                        Some(c.b_type.is_float()),
                    ),
                    dev(
                        matrix_elems(c.m, c.n, c.ldc, c.batch, c.stride_c) * sz(c.c_type),
                        true,
                        Some(c.c_type.is_float()),
                    ),
                ];
                if c.epilogue != GemmEpilogue::None {
                    v.push(dev(
                        c.m as u64 * sz(c.c_type),
                        false,
                        Some(c.c_type.is_float()),
                    ));
                }
                v
            }
            UnitParams::Op { args, .. } => {
                // An in-place op (trailing underscore) writes its first tensor.
                let in_place = op_name.ends_with('_') && !op_name.ends_with("__");
                let mut v = Vec::new();
                for a in args {
                    for t in a.tensors() {
                        let writes = in_place && v.is_empty();
                        // A tensor whose type the trace did not record (the tensors of a
                        // list, as Kineto records them) is of unknown kind, not integer.
                        let float = (t.dtype != crate::DType::Unknown).then(|| t.dtype.is_float());
                        v.push(dev(t.storage_bytes(), writes, float));
                    }
                }
                v
            }
            UnitParams::Compiled(c) => c
                .args
                .iter()
                .filter_map(|a| match a {
                    crate::KernelArg::Tensor { spec, writes } => Some(dev(
                        spec.storage_bytes(),
                        *writes,
                        Some(spec.dtype.is_float()),
                    )),
                    _ => None,
                })
                .collect(),
            UnitParams::Collective(_) | UnitParams::None(_) => Vec::new(),
        }
    }
}

/// Offsets that pack `items` (bytes, first use, last use; uses are positions in replay
/// order, inclusive) into one arena as a caching allocator would: walking the replay in
/// order, each storage takes the best-fitting free block at its first use (or grows the
/// arena) and returns it after its last use, merged with free neighbours. Returns each
/// item's offset, the arena size and the peak of live bytes. Offsets are aligned to 512
/// bytes, as PyTorch's allocator aligns its blocks. A last use before the first counts as
/// the first.
pub fn pack_by_liveness(items: &[(u64, u32, u32)]) -> (Vec<u64>, u64, u64) {
    use std::collections::BTreeMap;
    const ALIGN: u64 = 512;
    let round = |b: u64| b.max(1).div_ceil(ALIGN) * ALIGN;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (items[i].1, i));
    let mut by_end: Vec<usize> = (0..items.len()).collect();
    let last = |i: usize| items[i].2.max(items[i].1);
    by_end.sort_by_key(|&i| (last(i), i));
    // Free blocks by offset (offset -> size) and by (size, offset) for best fit.
    let mut free_at: BTreeMap<u64, u64> = BTreeMap::new();
    let mut free_by_size: BTreeMap<(u64, u64), ()> = BTreeMap::new();
    let mut offsets = vec![0u64; items.len()];
    let (mut arena, mut live, mut peak) = (0u64, 0u64, 0u64);
    let mut next_free = 0usize;
    let release = |off: u64,
                   size: u64,
                   free_at: &mut BTreeMap<u64, u64>,
                   free_by_size: &mut BTreeMap<(u64, u64), ()>| {
        let (mut off, mut size) = (off, size);
        if let Some((&po, &ps)) = free_at.range(..off).next_back() {
            if po + ps == off {
                free_at.remove(&po);
                free_by_size.remove(&(ps, po));
                off = po;
                size += ps;
            }
        }
        if let Some(&ns) = free_at.get(&(off + size)) {
            free_at.remove(&(off + size));
            free_by_size.remove(&(ns, off + size));
            size += ns;
        }
        free_at.insert(off, size);
        free_by_size.insert((size, off), ());
    };
    for &i in &order {
        let (bytes, first, _) = items[i];
        // Everything whose last use came before this first use is free again.
        while next_free < by_end.len() && last(by_end[next_free]) < first {
            let j = by_end[next_free];
            next_free += 1;
            let size = round(items[j].0);
            live -= size;
            release(offsets[j], size, &mut free_at, &mut free_by_size);
        }
        let size = round(bytes);
        let fit = free_by_size
            .range((size, 0)..)
            .next()
            .map(|(&(s, o), _)| (s, o));
        offsets[i] = match fit {
            Some((s, o)) => {
                free_by_size.remove(&(s, o));
                free_at.remove(&o);
                if s > size {
                    free_at.insert(o + size, s - size);
                    free_by_size.insert((s - size, o + size), ());
                }
                o
            }
            None => {
                // Grow the arena, absorbing a free block at its end.
                let tail = free_at
                    .iter()
                    .next_back()
                    .filter(|(&o, &s)| o + s == arena)
                    .map(|(&o, &s)| (o, s));
                match tail {
                    Some((o, s)) => {
                        free_at.remove(&o);
                        free_by_size.remove(&(s, o));
                        arena = o + size;
                        o
                    }
                    None => {
                        let o = arena;
                        arena += size;
                        o
                    }
                }
            }
        };
        live += size;
        peak = peak.max(live);
    }
    (offsets, arena, peak)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
        a.0 < b.0 + b.1 && b.0 < a.0 + a.1
    }

    #[test]
    fn matrix_spans() {
        // A 4x3 column-major matrix with ld 4: 12 elements.
        assert_eq!(matrix_elems(4, 3, 4, 1, 0), 12);
        // Padded ld: the last column needs only `rows` elements.
        assert_eq!(matrix_elems(4, 3, 10, 1, 0), 24);
        // Two batches 100 apart.
        assert_eq!(matrix_elems(4, 3, 4, 2, 100), 112);
        assert_eq!(matrix_elems(0, 3, 4, 1, 0), 0);
    }

    #[test]
    fn storages_alive_together_never_share_bytes() {
        let items = [
            (1000, 0, 5),
            (2000, 1, 2),
            (512, 3, 4),
            (4000, 6, 9),
            (100, 7, 7),
        ];
        let (off, arena, peak) = pack_by_liveness(&items);
        for i in 0..items.len() {
            for j in i + 1..items.len() {
                let live_together = items[i].1 <= items[j].2 && items[j].1 <= items[i].2;
                if live_together {
                    assert!(
                        !overlaps((off[i], items[i].0), (off[j], items[j].0)),
                        "{i} and {j} overlap"
                    );
                }
            }
        }
        // 1024 + 2048 live at once; later 4096 + 512 reuse the freed space.
        assert_eq!(peak, 4096 + 512);
        assert!(arena >= peak && arena <= 1024 + 2048 + 4096 + 512);
    }

    #[test]
    fn a_freed_block_is_reused_by_a_later_storage_of_its_size() {
        let (off, arena, peak) = pack_by_liveness(&[(4096, 0, 1), (4096, 2, 3), (4096, 4, 5)]);
        assert_eq!(off, vec![0, 0, 0]);
        assert_eq!((arena, peak), (4096, 4096));
    }

    #[test]
    fn one_operand_spanning_the_whole_replay_stays_apart() {
        let (off, arena, _) = pack_by_liveness(&[(512, 0, 9), (512, 1, 1), (512, 2, 2)]);
        assert_ne!(off[0], off[1]);
        assert_eq!(off[1], off[2]);
        assert_eq!(arena, 1024);
    }
}
