//! Kineto/CUPTI Chrome-trace events into per-file records: GPU activities, runtime/driver
//! calls by correlation id, CPU ops with their raw argument text, `cuda_sync` records and
//! host synchronisations. Modern (`kernel`, `cpu_op`, `ac2g`), legacy 2021 (`Kernel`,
//! `Runtime`, `Operator`, `"external id"`) and ROCm (`hip*`) spellings are all read here.
//!
//! Invariant: every event is either turned into a record, counted as ignored by category,
//! or reported as a diagnostic naming its index and byte offset; a structurally wrong event
//! (a non-object, a timestamp that is not a number) is a fatal [`EventError`].

use super::number::{i64_of, thread_id_of, u64_of, us_text_to_ns};
use crate::diag::Diagnostics;
use kc_ir::{CollectiveInfo, Interner, KernelGeometry, MemcpyKind, OpKind, StrId};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<Args<'a>>,
}

#[derive(Deserialize, Default)]
struct Args<'a> {
    #[serde(rename = "External id", alias = "external id", borrow, default)]
    external_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    correlation: Option<&'a RawValue>,
    #[serde(borrow, default)]
    device: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stream: Option<&'a RawValue>,
    #[serde(borrow, default)]
    bytes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    size: Option<&'a RawValue>,
    #[serde(borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    grid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    block: Option<&'a RawValue>,
    #[serde(rename = "registers per thread", borrow, default)]
    registers: Option<&'a RawValue>,
    #[serde(rename = "shared memory", borrow, default)]
    shared_memory: Option<&'a RawValue>,
    #[serde(rename = "Input Dims", alias = "Input dims", borrow, default)]
    input_dims: Option<&'a RawValue>,
    #[serde(rename = "Input Strides", borrow, default)]
    input_strides: Option<&'a RawValue>,
    #[serde(rename = "Input type", borrow, default)]
    input_type: Option<&'a RawValue>,
    #[serde(rename = "Concrete Inputs", borrow, default)]
    concrete_inputs: Option<&'a RawValue>,
    #[serde(rename = "Record function id", borrow, default)]
    record_function_id: Option<&'a RawValue>,
    #[serde(rename = "Sequence number", borrow, default)]
    sequence_number: Option<&'a RawValue>,
    #[serde(borrow, default)]
    wait_on_stream: Option<&'a RawValue>,
    #[serde(borrow, default)]
    wait_on_cuda_event_record_corr_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cuda_sync_kind: Option<Cow<'a, str>>,
    #[serde(rename = "Collective name", borrow, default)]
    collective_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    dtype: Option<Cow<'a, str>>,
    #[serde(rename = "In msg nelems", borrow, default)]
    in_nelems: Option<&'a RawValue>,
    #[serde(rename = "Out msg nelems", borrow, default)]
    out_nelems: Option<&'a RawValue>,
    #[serde(rename = "Group size", borrow, default)]
    group_size: Option<&'a RawValue>,
    #[serde(rename = "Process Group Name", borrow, default)]
    process_group: Option<Cow<'a, str>>,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
}

/// A GPU activity as read, before linking.
#[derive(Clone, Debug)]
pub struct GpuRec {
    pub kind: GpuKind,
    pub name: StrId,
    pub device: u32,
    pub stream: u64,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub correlation: u64,
    pub external_id: Option<u64>,
    pub geometry: Option<KernelGeometry>,
    pub bytes: Option<u64>,
    pub memcpy_kind: MemcpyKind,
    pub event_index: u64,
}

/// A runtime or driver call.
#[derive(Clone, Debug)]
pub struct RuntimeRec {
    pub api: StrId,
    pub tid: u64,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub external_id: Option<u64>,
    pub size: Option<u64>,
}

/// Host calls that order GPU work: waits, records and synchronisations.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum HostCallKind {
    EventRecord,
    StreamWaitEvent,
    /// Device, stream or event synchronize, or a synchronous memcpy.
    Synchronize,
}

#[derive(Clone, Debug)]
pub struct HostCall {
    pub kind: HostCallKind,
    pub tid: u64,
    pub ts_ns: i64,
    pub end_ns: i64,
    pub correlation: u64,
}

/// A CPU op or user annotation; its argument text is interned in `FileRecords::arg_blobs`.
#[derive(Clone, Debug)]
pub struct OpRec {
    pub name: StrId,
    pub kind: OpKind,
    pub tid: u64,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub external_id: u64,
    pub record_function_id: Option<u64>,
    pub sequence_number: Option<i64>,
    pub args_blob: Option<u32>,
    pub collective: Option<Box<CollectiveInfo>>,
}

/// A `cuda_sync` event (CUPTI synchronization activity).
#[derive(Clone, Debug)]
pub struct CudaSyncRec {
    pub kind: String,
    pub ts_ns: i64,
    pub stream: Option<u64>,
    pub wait_on_stream: Option<u64>,
    pub record_correlation: Option<u64>,
    pub correlation: u64,
}

/// The raw argument text of an op: Input Dims, Strides, type, Concrete Inputs.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ArgText {
    pub dims: Box<str>,
    pub strides: Box<str>,
    pub types: Box<str>,
    pub concrete: Box<str>,
}

#[derive(Default)]
pub struct FileRecords {
    pub gpu: Vec<GpuRec>,
    pub runtime: HashMap<u64, RuntimeRec>,
    pub host_calls: Vec<HostCall>,
    pub ops: Vec<OpRec>,
    pub cuda_syncs: Vec<CudaSyncRec>,
    pub arg_blobs: Vec<ArgText>,
    arg_index: HashMap<ArgText, u32>,
    /// Events read per category ("(none)" for events without one).
    pub categories: BTreeMap<String, u64>,
    pub events: u64,
    pub flows: u64,
    pub rocm: bool,
    pub min_ts_ns: Option<i64>,
}

/// A fatal problem with one event.
#[derive(Debug)]
pub struct EventError {
    pub index: u64,
    pub offset: u64,
    pub message: String,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Cat {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    Op,
    Annotation,
    CudaSync,
    Flow,
    Other,
}

fn category(cat: &str) -> Cat {
    match cat {
        "kernel" | "Kernel" => Cat::Kernel,
        "gpu_memcpy" | "Memcpy" => Cat::Memcpy,
        "gpu_memset" | "Memset" => Cat::Memset,
        "cuda_runtime" | "Runtime" | "cuda_driver" | "Driver" => Cat::Runtime,
        "cpu_op" | "Operator" => Cat::Op,
        "user_annotation" => Cat::Annotation,
        "cuda_sync" => Cat::CudaSync,
        "ac2g" | "async" | "async_gpu" | "async_cpu_to_gpu" | "fwdbwd" => Cat::Flow,
        _ => Cat::Other,
    }
}

fn raw(v: Option<&RawValue>) -> Option<&[u8]> {
    v.map(|r| r.get().as_bytes())
}

/// `[a, b, c]` of small integers.
fn dim3(v: Option<&RawValue>) -> [u32; 3] {
    let mut out = [1u32; 3];
    if let Some(r) = v {
        let s = r.get().trim_start_matches('[').trim_end_matches(']');
        for (i, part) in s.split(',').take(3).enumerate() {
            out[i] = u64_of(part.trim().as_bytes()).unwrap_or(1).min(u64::from(u32::MAX)) as u32;
        }
    }
    out
}

/// "Memcpy HtoD (Pageable -> Device)" -> HtoD; ROCm puts the kind in `args.kind`.
pub fn memcpy_kind_of(name: &str, kind_arg: Option<&[u8]>) -> MemcpyKind {
    let from = |t: &str| match t {
        "HtoD" => Some(MemcpyKind::HtoD),
        "DtoH" => Some(MemcpyKind::DtoH),
        "DtoD" => Some(MemcpyKind::DtoD),
        "HtoH" => Some(MemcpyKind::HtoH),
        "PtoP" => Some(MemcpyKind::PtoP),
        _ => None,
    };
    if let Some(k) = name.split_whitespace().nth(1).and_then(from) {
        return k;
    }
    if let Some(k) = kind_arg
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(|s| s.trim_matches('"'))
        .and_then(from)
    {
        return k;
    }
    MemcpyKind::Unknown
}

fn host_call_kind(api: &str) -> Option<HostCallKind> {
    let base = api
        .strip_prefix("cuda")
        .or_else(|| api.strip_prefix("hip"))
        .or_else(|| api.strip_prefix("cu"))?;
    let base = base.trim_end_matches("_v2").trim_end_matches("_ptsz");
    Some(match base {
        "EventRecord" | "EventRecordWithFlags" => HostCallKind::EventRecord,
        "StreamWaitEvent" => HostCallKind::StreamWaitEvent,
        "DeviceSynchronize" | "StreamSynchronize" | "EventSynchronize" | "CtxSynchronize"
        | "Memcpy" | "MemcpyHtoD" | "MemcpyDtoH" => HostCallKind::Synchronize,
        _ => return None,
    })
}

impl FileRecords {
    fn intern_args(&mut self, a: &Args<'_>) -> Option<u32> {
        if a.input_dims.is_none() && a.input_type.is_none() {
            return None;
        }
        let s = |v: Option<&RawValue>| -> Box<str> { v.map(|r| r.get()).unwrap_or("").into() };
        let text = ArgText {
            dims: s(a.input_dims),
            strides: s(a.input_strides),
            types: s(a.input_type),
            concrete: s(a.concrete_inputs),
        };
        if let Some(&i) = self.arg_index.get(&text) {
            return Some(i);
        }
        let i = self.arg_blobs.len() as u32;
        self.arg_blobs.push(text.clone());
        self.arg_index.insert(text, i);
        Some(i)
    }

    /// Reads one event. `location` names the file for diagnostics.
    pub fn add_event(
        &mut self,
        bytes: &[u8],
        index: u64,
        offset: u64,
        location: &str,
        strings: &mut Interner,
        diags: &mut Diagnostics,
    ) -> Result<(), EventError> {
        self.events += 1;
        let lossy;
        let ev: Event<'_> = match serde_json::from_slice(bytes) {
            Ok(ev) => ev,
            Err(e) => {
                if std::str::from_utf8(bytes).is_err() {
                    lossy = String::from_utf8_lossy(bytes).into_owned();
                    diags.add(
                        "invalid_utf8",
                        format!("{location} event {index} (byte {offset})"),
                        "invalid UTF-8 replaced with U+FFFD",
                    );
                    serde_json::from_str(&lossy).map_err(|e| self.err(index, offset, bytes, e))?
                } else {
                    return Err(self.err(index, offset, bytes, e));
                }
            }
        };
        let cat_str = ev.cat.as_deref().unwrap_or("");
        *self
            .categories
            .entry(if cat_str.is_empty() { "(none)" } else { cat_str }.to_string())
            .or_insert(0) += 1;
        let ph = ev.ph.as_deref().unwrap_or("");
        if ph == "s" || ph == "f" || ph == "t" {
            self.flows += 1;
            return Ok(());
        }
        if ph != "X" {
            return Ok(());
        }
        let cat = category(cat_str);
        if matches!(cat, Cat::Other | Cat::Flow) {
            return Ok(());
        }
        let here = || format!("{location} event {index} (byte {offset})");
        let ts_ns = match ev.ts {
            None => {
                diags.add("missing_field", here(), "event without `ts` skipped");
                return Ok(());
            }
            Some(t) => us_text_to_ns(t.get().as_bytes()).ok_or_else(|| EventError {
                index,
                offset,
                message: format!("field `ts` is not a number: {}", clip(t.get())),
            })?,
        };
        let dur_ns = match ev.dur {
            None => {
                diags.add("missing_field", here(), "event without `dur`: duration 0");
                0
            }
            Some(d) => us_text_to_ns(d.get().as_bytes()).ok_or_else(|| EventError {
                index,
                offset,
                message: format!("field `dur` is not a number: {}", clip(d.get())),
            })?,
        };
        let dur_ns = if dur_ns < 0 {
            diags.add("negative_duration", here(), format!("duration {dur_ns} ns clamped to 0"));
            0
        } else {
            dur_ns
        };
        self.min_ts_ns = Some(self.min_ts_ns.map_or(ts_ns, |m| m.min(ts_ns)));
        let name = match ev.name.as_deref() {
            Some(n) => n,
            None => {
                diags.add("missing_field", here(), "event without `name` named \"(unnamed)\"");
                "(unnamed)"
            }
        };
        let args = ev.args.unwrap_or_default();
        let tid = raw(ev.tid).map(thread_id_of).unwrap_or(0);
        let external_id = raw(args.external_id).and_then(u64_of).filter(|&x| x != 0);
        match cat {
            Cat::Kernel | Cat::Memcpy | Cat::Memset => {
                let correlation = match raw(args.correlation).and_then(u64_of) {
                    Some(c) => c,
                    None => {
                        diags.add(
                            "missing_field",
                            here(),
                            "GPU activity without `correlation`: it cannot be linked to its launch",
                        );
                        0
                    }
                };
                // Legacy traces put the device in pid and the stream in tid ("stream 7").
                let device = raw(args.device)
                    .and_then(u64_of)
                    .or_else(|| raw(ev.pid).and_then(u64_of))
                    .unwrap_or(0) as u32;
                let stream = raw(args.stream).and_then(u64_of).unwrap_or(tid);
                let kind = match cat {
                    Cat::Kernel => GpuKind::Kernel,
                    Cat::Memcpy => GpuKind::Memcpy,
                    _ => GpuKind::Memset,
                };
                let geometry = (kind == GpuKind::Kernel).then(|| KernelGeometry {
                    grid: dim3(args.grid),
                    block: dim3(args.block),
                    registers_per_thread: raw(args.registers).and_then(u64_of).unwrap_or(0) as u32,
                    shared_memory: raw(args.shared_memory).and_then(u64_of).unwrap_or(0) as u32,
                });
                let memcpy_kind = if kind == GpuKind::Memcpy {
                    memcpy_kind_of(name, raw(args.kind))
                } else {
                    MemcpyKind::Unknown
                };
                self.gpu.push(GpuRec {
                    kind,
                    name: strings.intern(name),
                    device,
                    stream,
                    ts_ns,
                    dur_ns,
                    correlation,
                    external_id,
                    geometry,
                    bytes: raw(args.bytes).and_then(u64_of),
                    memcpy_kind,
                    event_index: index,
                });
            }
            Cat::Runtime => {
                if name.starts_with("hip") {
                    self.rocm = true;
                }
                let correlation = raw(args.correlation).and_then(u64_of).unwrap_or(0);
                if let Some(kind) = host_call_kind(name) {
                    self.host_calls.push(HostCall {
                        kind,
                        tid,
                        ts_ns,
                        end_ns: ts_ns + dur_ns,
                        correlation,
                    });
                }
                if correlation != 0 {
                    let rec = RuntimeRec {
                        api: strings.intern(name),
                        tid,
                        ts_ns,
                        dur_ns,
                        external_id,
                        size: raw(args.size).and_then(u64_of),
                    };
                    if self.runtime.insert(correlation, rec).is_some() {
                        diags.add(
                            "duplicate_correlation",
                            here(),
                            format!("correlation {correlation} used by two runtime calls; the later one is kept"),
                        );
                    }
                }
            }
            Cat::Op | Cat::Annotation => {
                let args_blob = self.intern_args(&args);
                let collective = args.collective_name.as_ref().map(|c| {
                    Box::new(CollectiveInfo {
                        collective: c.to_string(),
                        dtype: args.dtype.as_deref().unwrap_or("").to_string(),
                        in_nelems: raw(args.in_nelems).and_then(u64_of),
                        out_nelems: raw(args.out_nelems).and_then(u64_of),
                        group_size: raw(args.group_size).and_then(u64_of).map(|g| g as u32),
                        process_group: args.process_group.as_deref().unwrap_or("").to_string(),
                    })
                });
                self.ops.push(OpRec {
                    name: strings.intern(name),
                    kind: if cat == Cat::Op {
                        OpKind::Op
                    } else {
                        OpKind::Annotation
                    },
                    tid,
                    ts_ns,
                    dur_ns,
                    external_id: external_id.unwrap_or(0),
                    record_function_id: raw(args.record_function_id).and_then(u64_of),
                    sequence_number: raw(args.sequence_number).and_then(i64_of),
                    args_blob,
                    collective,
                });
            }
            Cat::CudaSync => {
                let neg1 = |v: Option<&RawValue>| raw(v).and_then(i64_of).filter(|&x| x >= 0).map(|x| x as u64);
                self.cuda_syncs.push(CudaSyncRec {
                    kind: args.cuda_sync_kind.as_deref().unwrap_or(name).to_string(),
                    ts_ns,
                    stream: neg1(args.stream),
                    wait_on_stream: neg1(args.wait_on_stream),
                    record_correlation: neg1(args.wait_on_cuda_event_record_corr_id),
                    correlation: raw(args.correlation).and_then(u64_of).unwrap_or(0),
                });
            }
            Cat::Flow | Cat::Other => {}
        }
        Ok(())
    }

    fn err(&self, index: u64, offset: u64, bytes: &[u8], e: serde_json::Error) -> EventError {
        // serde_json counts lines and columns inside the event; turn them into a file offset.
        let mut line = 1;
        let mut at = 0usize;
        for (i, &b) in bytes.iter().enumerate() {
            if line == e.line() {
                at = i;
                break;
            }
            if b == b'\n' {
                line += 1;
            }
        }
        let within = at + e.column().saturating_sub(1);
        let msg = e.to_string();
        let msg = msg.split(" at line").next().unwrap_or(&msg).to_string();
        let message = if bytes.first() != Some(&b'{') {
            format!("event is not a JSON object: {}", clip(&String::from_utf8_lossy(bytes)))
        } else {
            format!("malformed event: {msg}")
        };
        EventError {
            index,
            offset: offset + within as u64,
            message,
        }
    }
}

fn clip(s: &str) -> String {
    if s.len() > 60 {
        let mut end = 60;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}
