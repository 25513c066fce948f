//! Tier 1: the CUDA runtime's copies and fills (`cuMemcpyAsync`, `cuMemsetD8Async`) of the
//! traced sizes, between the operands' places.
//!
//! Invariant: a copy or fill touches exactly the bytes the plan sized for its operands.

use super::{At, Backend};
use crate::device::{cu_err, Device};
use crate::ExecError;
use cudarc::driver::sys as cu;
use kc_core::plan::types::{PlanUnit, UnitCall};

pub struct Runtime;

impl Backend for Runtime {
    fn name(&self) -> &'static str {
        "CUDA runtime"
    }

    fn makes(&self, call: &UnitCall) -> bool {
        matches!(call, UnitCall::Memcpy { .. } | UnitCall::Memset { .. })
    }

    fn enqueue(
        &self,
        dev: &Device,
        unit: &PlanUnit,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        let stream = dev.streams[s];
        // SAFETY: every address is a live buffer slot (or image place) of at least the
        // size the plan's buffer planning computed for this operand.
        unsafe {
            match &unit.call {
                UnitCall::Memcpy {
                    bytes, src, dst, ..
                } => cu_err(
                    cu::cuMemcpyAsync(
                        dev.addr(unit, *dst, at),
                        dev.addr(unit, *src, at),
                        *bytes as usize,
                        stream,
                    ),
                    "cuMemcpyAsync",
                ),
                UnitCall::Memset { bytes, value, dst } => cu_err(
                    cu::cuMemsetD8Async(dev.addr(unit, *dst, at), *value, *bytes as usize, stream),
                    "cuMemsetD8Async",
                ),
                _ => Ok(()),
            }
        }
    }
}
