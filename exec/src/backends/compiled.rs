//! Tier 4: compiled kernels (torch.compile's Triton kernels) launched from their cubins,
//! the one generic launcher for any kernel kc has the binary of. A plan's binaries are
//! loaded once (`cuModuleLoadData`), each entry looked up by name and allowed the dynamic
//! shared memory it was compiled for; a launch is one `cuLaunchKernel` with the traced
//! grid and block and the plan's argument values, so it is captured into a CUDA graph like
//! any other kernel launch.
//!
//! Invariant: every module loaded here is unloaded when the back end drops, and a launch passes exactly the entry's parameters, in order, each of
//! the width its type declares.

use super::{At, Backend};
use crate::device::{cu_err, Device};
use crate::ExecError;
use cudarc::driver::sys as cu;
use kc_core::plan::aten_call::is_float;
use kc_core::plan::types::{ElemType, KernelArgValue, KernelBinary, Plan, PlanUnit, UnitCall};
use std::collections::HashMap;
use std::ffi::{c_void, CString};

/// Shared memory a kernel may use without opting in (48 KiB).
const DEFAULT_SHARED: u32 = 48 * 1024;

/// Loaded binaries and the scratch memory of the units that need some.
#[derive(Default)]
pub struct Kernels {
    modules: Vec<cu::CUmodule>,
    functions: Vec<cu::CUfunction>,
    shared: Vec<u32>,
    names: Vec<String>,
    /// Per unit, one device allocation per scratch argument (0: a null pointer).
    scratch: HashMap<u32, Vec<cu::CUdeviceptr>>,
}

impl Kernels {
    /// Loads every binary of a plan into the current context.
    ///
    /// # Safety
    /// A CUDA context must be current on this thread.
    pub unsafe fn load(&mut self, binaries: &[KernelBinary], sm: u32) -> Result<(), ExecError> {
        for b in binaries {
            if b.arch != 0 && sm != 0 && b.arch != sm {
                return Err(ExecError::WrongArchitecture {
                    name: b.name.clone(),
                    built: b.arch,
                    gpu: sm,
                });
            }
            let mut m: cu::CUmodule = std::ptr::null_mut();
            cu_err(
                cu::cuModuleLoadData(&mut m, b.cubin.as_ptr() as *const c_void),
                &format!("cuModuleLoadData ({}, from {})", b.name, b.origin),
            )?;
            self.modules.push(m);
            let name = CString::new(b.name.as_str()).map_err(|_| ExecError::OutOfRange {
                what: "kernel name",
                value: format!("{:?}", b.name),
            })?;
            let mut f: cu::CUfunction = std::ptr::null_mut();
            cu_err(
                cu::cuModuleGetFunction(&mut f, m, name.as_ptr()),
                &format!("cuModuleGetFunction ({})", b.name),
            )?;
            if b.shared_bytes > DEFAULT_SHARED {
                cu_err(
                    cu::cuFuncSetAttribute(
                        f,
                        cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        b.shared_bytes as i32,
                    ),
                    &format!(
                        "cuFuncSetAttribute ({}, {} B shared)",
                        b.name, b.shared_bytes
                    ),
                )?;
            }
            self.functions.push(f);
            self.shared.push(b.shared_bytes);
            self.names.push(b.name.clone());
        }
        Ok(())
    }

    /// Allocates a unit's scratch memory (before any capture).
    ///
    /// # Safety
    /// A CUDA context must be current on this thread.
    pub unsafe fn prepare(&mut self, unit: &PlanUnit) -> Result<(), ExecError> {
        let UnitCall::Kernel { args, .. } = &unit.call else {
            return Ok(());
        };
        if self.scratch.contains_key(&unit.id) {
            return Ok(());
        }
        let mut v = Vec::new();
        for a in args {
            if let KernelArgValue::Scratch { bytes } = a {
                let mut p: cu::CUdeviceptr = 0;
                if *bytes > 0 {
                    cu_err(
                        cu::cuMemAlloc_v2(&mut p, *bytes as usize),
                        "cuMemAlloc (kernel scratch)",
                    )?;
                    cu_err(
                        cu::cuMemsetD8_v2(p, 0, *bytes as usize),
                        "cuMemset (kernel scratch)",
                    )?;
                }
                v.push(p);
            }
        }
        self.scratch.insert(unit.id, v);
        Ok(())
    }

    /// Enqueues one launch of a tier-4 unit on `stream`, its pointer arguments at the
    /// addresses `addr` gives for their slots.
    ///
    /// # Safety
    /// The unit's buffers (or places) must be live and as large as the plan sized them.
    pub unsafe fn launch(
        &self,
        unit: &PlanUnit,
        addr: impl Fn(u32) -> cu::CUdeviceptr,
        stream: cu::CUstream,
    ) -> Result<(), ExecError> {
        let UnitCall::Kernel {
            binary,
            grid,
            block,
            args,
        } = &unit.call
        else {
            return Err(ExecError::NotPrepared {
                unit: unit.id,
                what: "a compiled kernel call",
            });
        };
        let b = *binary as usize;
        let (Some(&f), Some(&shared)) = (self.functions.get(b), self.shared.get(b)) else {
            return Err(ExecError::NotPrepared {
                unit: unit.id,
                what: "its kernel binary",
            });
        };
        // Each value lives in its own 8-byte cell; the driver reads as many bytes of each
        // as the parameter's declared width.
        let scratch = self.scratch.get(&unit.id);
        let mut next_scratch = 0;
        let mut cells: Vec<u64> = Vec::with_capacity(args.len());
        for a in args {
            cells.push(match a {
                KernelArgValue::Pointer { slot, .. } => addr(*slot),
                KernelArgValue::I32(v) => *v as u32 as u64,
                KernelArgValue::I64(v) => *v as u64,
                KernelArgValue::F32(v) => u64::from(v.to_bits()),
                KernelArgValue::F64(v) => v.to_bits(),
                KernelArgValue::Scratch { .. } => {
                    let p = scratch
                        .and_then(|s| s.get(next_scratch))
                        .copied()
                        .unwrap_or(0);
                    next_scratch += 1;
                    p
                }
            });
        }
        let mut ptrs: Vec<*mut c_void> = cells
            .iter_mut()
            .map(|c| c as *mut u64 as *mut c_void)
            .collect();
        cu_err(
            cu::cuLaunchKernel(
                f,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared,
                stream,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            ),
            &format!("cuLaunchKernel ({}, unit {})", self.names[b], unit.id),
        )
    }

    /// Frees scratch memory and unloads the modules.
    ///
    /// # Safety
    /// The device must be idle (no graph or stream still uses them).
    pub unsafe fn release(&mut self) {
        for (_, v) in self.scratch.drain() {
            for p in v.into_iter().filter(|&p| p != 0) {
                cu::cuMemFree_v2(p);
            }
        }
        for m in self.modules.drain(..) {
            cu::cuModuleUnload(m);
        }
        self.functions.clear();
        self.shared.clear();
        self.names.clear();
    }
}

/// Tier 4 as a back end: the plan's binaries loaded once, integer operands zeroed, scratch
/// allocated, one `cuLaunchKernel` per invocation.
#[derive(Default)]
pub struct Compiled {
    kernels: Kernels,
}

impl Backend for Compiled {
    fn name(&self) -> &'static str {
        "compiled kernels"
    }

    fn makes(&self, call: &UnitCall) -> bool {
        matches!(call, UnitCall::Kernel { .. })
    }

    fn load(&mut self, dev: &mut Device, plan: &Plan) -> Result<(), ExecError> {
        if plan.binaries.is_empty() {
            return Ok(());
        }
        // SAFETY: the device's context is current on this thread (made so by `open`).
        unsafe { self.kernels.load(&plan.binaries, dev.facts.sm) }
    }

    fn prepare(&mut self, dev: &mut Device, unit: &PlanUnit) -> Result<(), ExecError> {
        let UnitCall::Kernel { args, .. } = &unit.call else {
            return Ok(());
        };
        // Integer and boolean operands (indices, masks) keep private buffers; zeros are
        // valid indices, where the float pattern the buffers start with is not (a gather's
        // bounds check would trap).
        for a in args {
            if let KernelArgValue::Pointer { slot, dtype } = a {
                // An operand of unknown type keeps the values it starts with.
                if !is_float(*dtype) && *dtype != ElemType::Unknown {
                    let b = &dev.buffers[*slot as usize];
                    if !b.host.is_null() {
                        continue;
                    }
                    // SAFETY: a live device allocation of `bytes` bytes.
                    unsafe { cu_err(cu::cuMemsetD8_v2(b.ptr, 0, b.bytes as usize), "cuMemset")? };
                }
            }
        }
        // SAFETY: the device's context is current on this thread.
        unsafe { self.kernels.prepare(unit) }
    }

    fn enqueue(
        &self,
        dev: &Device,
        unit: &PlanUnit,
        s: usize,
        at: At<'_>,
    ) -> Result<(), ExecError> {
        // SAFETY: the unit's operands are live slots (or image places) of the sizes the
        // plan computed.
        unsafe {
            self.kernels
                .launch(unit, |slot| dev.addr(unit, slot, at), dev.streams[s])
        }
    }
}

impl Drop for Compiled {
    fn drop(&mut self) {
        // SAFETY: the device is synchronised (by `Gpu`'s drop) before back ends drop.
        unsafe { self.kernels.release() }
    }
}
