//! Kineto/CUPTI Chrome-trace events into per-file records: GPU activities, runtime/driver
//! calls by correlation id, CPU ops with their raw argument text, `cuda_sync` records and
//! host synchronisations. Modern (`kernel`, `cpu_op`, `ac2g`), legacy 2021 (`Kernel`,
//! `Runtime`, `Operator`, `"external id"`) and ROCm (`hip*`) spellings are all read here.
//!
//! Invariant: every event is either turned into a record, counted as ignored by category,
//! or reported as a diagnostic naming its index and byte offset; a structurally wrong event
//! (a non-object, a timestamp that is not a number) is a fatal [`EventError`].

use super::fields::{read_event, string_value, ArgFields};
use super::number::{i64_of, thread_id_of, u64_of, us_text_to_ns};
use crate::diag::Diagnostics;
use kc_ir::{CollectiveInfo, Interner, KernelGeometry, MemcpyKind, OpKind, StrId};
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;

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
    /// Event index, so the later of two calls with one correlation wins after a merge.
    pub index: u64,
}

/// Host calls that order GPU work: waits, records and synchronisations.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
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
    /// A compiled kernel's launch record (its `op` is filled in by the graph builder).
    pub compiled: Option<Box<kc_ir::CompiledLaunch>>,
    /// Event index: the final tie-break wherever ops are ordered, so the order in which
    /// records were collected never matters.
    pub index: u64,
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

/// One worker's share of a file: its records and its own string table.
pub struct WorkerPart {
    pub recs: FileRecords,
    pub strings: Interner,
}

#[derive(Default)]
pub struct FileRecords {
    pub gpu: Vec<GpuRec>,
    pub runtime: FxHashMap<u64, RuntimeRec>,
    pub host_calls: Vec<HostCall>,
    pub ops: Vec<OpRec>,
    pub cuda_syncs: Vec<CudaSyncRec>,
    pub arg_blobs: Vec<ArgText>,
    /// Hash of an op's four argument texts -> blobs with that hash.
    arg_index: FxHashMap<u64, Vec<u32>>,
    /// Events read per category ("(none)" for events without one); filled from
    /// `raw_categories` by [`FileRecords::finish`].
    pub categories: BTreeMap<String, u64>,
    /// Counts per raw category text, as it appears in the file (few distinct values).
    raw_categories: Vec<(Box<[u8]>, u64)>,
    /// Raw name text -> interned name and whether its UTF-8 was repaired: a trace repeats
    /// a few hundred names a million times, so each is decoded and hashed once.
    name_cache: FxHashMap<Box<[u8]>, (StrId, bool)>,
    pub events: u64,
    pub flows: u64,
    pub rocm: bool,
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

/// The category of an event from its raw `cat` value (a JSON string, quotes included).
fn category(raw: &[u8]) -> Cat {
    match raw {
        b"\"kernel\"" | b"\"Kernel\"" => Cat::Kernel,
        b"\"gpu_memcpy\"" | b"\"Memcpy\"" => Cat::Memcpy,
        b"\"gpu_memset\"" | b"\"Memset\"" => Cat::Memset,
        b"\"cuda_runtime\"" | b"\"Runtime\"" | b"\"cuda_driver\"" | b"\"Driver\"" => Cat::Runtime,
        b"\"cpu_op\"" | b"\"Operator\"" => Cat::Op,
        b"\"user_annotation\"" => Cat::Annotation,
        b"\"cuda_sync\"" => Cat::CudaSync,
        b"\"ac2g\"" | b"\"async\"" | b"\"async_gpu\"" | b"\"async_cpu_to_gpu\"" | b"\"fwdbwd\"" => {
            Cat::Flow
        }
        // A category spelled with escapes is decoded first.
        _ if raw.contains(&b'\\') => match string_value(raw) {
            Some((c, _)) => category(format!("\"{c}\"").as_bytes()),
            None => Cat::Other,
        },
        _ => Cat::Other,
    }
}

/// `[a, b, c]` of small integers.
fn dim3(v: Option<&[u8]>) -> [u32; 3] {
    let mut out = [1u32; 3];
    if let Some(r) = v.and_then(|r| std::str::from_utf8(r).ok()) {
        let s = r.trim_start_matches('[').trim_end_matches(']');
        for (i, part) in s.split(',').take(3).enumerate() {
            out[i] = u64_of(part.trim().as_bytes())
                .unwrap_or(1)
                .min(u64::from(u32::MAX)) as u32;
        }
    }
    out
}

fn text(v: Option<&[u8]>) -> String {
    v.and_then(string_value)
        .map(|(s, _)| s.into_owned())
        .unwrap_or_default()
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
    /// Puts the parts of several workers together: their strings move into `strings`,
    /// their argument texts into one table, their records are appended in worker order.
    /// Every record carries its event index, which is what all later orderings break ties
    /// on, so the result does not depend on which worker read which event.
    pub fn merge(
        parts: Vec<WorkerPart>,
        strings: &mut Interner,
        diags: &mut Diagnostics,
    ) -> FileRecords {
        let mut out = FileRecords::default();
        let mut blob_index: HashMap<ArgText, u32> = HashMap::new();
        for (k, mut part) in parts.into_iter().enumerate() {
            let remap: Vec<StrId> = (0..part.strings.len() as u32)
                .map(|i| strings.intern(part.strings.get(StrId(i))))
                .collect();
            let blobs: Vec<u32> = part
                .recs
                .arg_blobs
                .iter()
                .map(|t| {
                    *blob_index.entry(t.clone()).or_insert_with(|| {
                        out.arg_blobs.push(t.clone());
                        (out.arg_blobs.len() - 1) as u32
                    })
                })
                .collect();
            for g in &mut part.recs.gpu {
                g.name = remap[g.name.0 as usize];
            }
            for o in &mut part.recs.ops {
                o.name = remap[o.name.0 as usize];
                o.args_blob = o.args_blob.map(|b| blobs[b as usize]);
            }
            if k == 0 {
                // The first part's vectors and map become the output as they are: growing
                // them in place avoids copying the largest part.
                for r in part.recs.runtime.values_mut() {
                    r.api = remap[r.api.0 as usize];
                }
                out.gpu = std::mem::take(&mut part.recs.gpu);
                out.ops = std::mem::take(&mut part.recs.ops);
                out.host_calls = std::mem::take(&mut part.recs.host_calls);
                out.cuda_syncs = std::mem::take(&mut part.recs.cuda_syncs);
                out.runtime = std::mem::take(&mut part.recs.runtime);
            }
            out.gpu.append(&mut part.recs.gpu);
            out.ops.append(&mut part.recs.ops);
            out.host_calls.append(&mut part.recs.host_calls);
            out.cuda_syncs.append(&mut part.recs.cuda_syncs);
            for (corr, mut r) in part.recs.runtime {
                r.api = remap[r.api.0 as usize];
                match out.runtime.get(&corr) {
                    Some(prev) => {
                        diags.add(
                            "duplicate_correlation",
                            format!("event {}", r.index.max(prev.index)),
                            format!("correlation {corr} used by two runtime calls; the later one is kept"),
                        );
                        if r.index > prev.index {
                            out.runtime.insert(corr, r);
                        }
                    }
                    None => {
                        out.runtime.insert(corr, r);
                    }
                }
            }
            for (k, v) in part.recs.categories {
                *out.categories.entry(k).or_insert(0) += v;
            }
            out.events += part.recs.events;
            out.flows += part.recs.flows;
            out.rocm |= part.recs.rocm;
        }
        out
    }

    /// Turns the raw category counts into `categories` once all events are read.
    pub fn finish(&mut self) {
        for (raw, n) in std::mem::take(&mut self.raw_categories) {
            let key = if raw.is_empty() {
                "(none)".to_string()
            } else {
                string_value(&raw)
                    .map(|(c, _)| c.into_owned())
                    .unwrap_or_else(|| String::from_utf8_lossy(&raw).into_owned())
            };
            *self.categories.entry(key).or_insert(0) += n;
        }
    }

    /// Interns an op's argument texts without allocating when they were seen before:
    /// a trace repeats the same few hundred argument lists across all iterations.
    fn intern_args(&mut self, a: &ArgFields<'_>) -> Option<u32> {
        if a.input_dims.is_none() && a.input_type.is_none() {
            return None;
        }
        let parts = [
            a.input_dims,
            a.input_strides,
            a.input_type,
            a.concrete_inputs,
        ]
        .map(|p| p.unwrap_or(b""));
        let mut h = FxHasher::default();
        for p in parts {
            h.write(p);
            h.write_u8(0xff);
        }
        let key = h.finish();
        let same = |t: &ArgText| {
            [&t.dims, &t.strides, &t.types, &t.concrete]
                .iter()
                .zip(parts)
                .all(|(x, p)| x.as_bytes() == p)
        };
        if let Some(list) = self.arg_index.get(&key) {
            if let Some(&i) = list.iter().find(|&&i| same(&self.arg_blobs[i as usize])) {
                return Some(i);
            }
        }
        let s = |p: &[u8]| -> Box<str> { String::from_utf8_lossy(p).into() };
        let i = self.arg_blobs.len() as u32;
        self.arg_blobs.push(ArgText {
            dims: s(parts[0]),
            strides: s(parts[1]),
            types: s(parts[2]),
            concrete: s(parts[3]),
        });
        self.arg_index.entry(key).or_default().push(i);
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
        let Ok(ev) = read_event(bytes) else {
            return Err(self.err(index, offset, bytes));
        };
        let here = || format!("{location} event {index} (byte {offset})");
        if ev.bad_key {
            diags.add(
                "invalid_utf8_key",
                here(),
                "a key is not valid UTF-8: the field it may have been is not read",
            );
        }
        if ev.duplicate_key {
            diags.add(
                "duplicate_key",
                here(),
                "a field appears twice in one event: the last value is used",
            );
        }
        for (field, v) in [("ph", ev.ph), ("cat", ev.cat)] {
            if v.is_some_and(|v| !v.starts_with(b"\"")) {
                diags.add(
                    "non_string_field",
                    here(),
                    format!(
                        "`{field}` is {}, not a string: the event is not read",
                        clip(&String::from_utf8_lossy(v.unwrap_or_default()))
                    ),
                );
            }
        }
        let raw_cat: &[u8] = ev.cat.unwrap_or(b"");
        match self
            .raw_categories
            .iter_mut()
            .find(|(k, _)| **k == *raw_cat)
        {
            Some((_, c)) => *c += 1,
            None => self.raw_categories.push((raw_cat.into(), 1)),
        }
        let ph: &[u8] = ev.ph.unwrap_or(b"");
        if matches!(ph, b"\"s\"" | b"\"f\"" | b"\"t\"") {
            self.flows += 1;
            return Ok(());
        }
        if ph != b"\"X\"" {
            return Ok(());
        }
        let cat = category(raw_cat);
        if cat == Cat::Other {
            // GPU work under a category kc does not know (a renamed `cat`): it has a device,
            // a stream and a correlation. Counted and named, never lost in silence.
            if let Some(a) = ev.args.as_ref() {
                if a.device.is_some() && a.stream.is_some() && a.correlation.is_some() {
                    diags.add(
                        "unclassified_gpu_event",
                        here(),
                        format!(
                            "category {} is not one kc reads, but the event has a device, a stream \
                             and a correlation: GPU work left out (kernel, gpu_memcpy and \
                             gpu_memset are read)",
                            clip(&String::from_utf8_lossy(raw_cat))
                        ),
                    );
                }
            }
            return Ok(());
        }
        if cat == Cat::Flow {
            return Ok(());
        }
        for (field, v) in [("ts", ev.ts), ("dur", ev.dur)] {
            if v.is_some_and(|v| v.starts_with(b"\"")) {
                diags.add(
                    "number_as_string",
                    here(),
                    format!("`{field}` is written as a string: read as the number it holds"),
                );
            }
        }
        let ts_ns = match ev.ts {
            None => {
                diags.add("missing_field", here(), "event without `ts` skipped");
                return Ok(());
            }
            Some(t) => us_text_to_ns(t).ok_or_else(|| EventError {
                index,
                offset,
                message: format!(
                    "field `ts` is not a number: {}",
                    clip(&String::from_utf8_lossy(t))
                ),
            })?,
        };
        let dur_ns = match ev.dur {
            None => {
                diags.add("missing_field", here(), "event without `dur`: duration 0");
                0
            }
            Some(d) => us_text_to_ns(d).ok_or_else(|| EventError {
                index,
                offset,
                message: format!(
                    "field `dur` is not a number: {}",
                    clip(&String::from_utf8_lossy(d))
                ),
            })?,
        };
        if ts_ns < 0 {
            diags.add(
                "negative_timestamp",
                here(),
                format!("`ts` is {ts_ns} ns, before the trace's base time"),
            );
        }
        let dur_ns = if dur_ns < 0 {
            diags.add(
                "negative_duration",
                here(),
                format!("duration {dur_ns} ns clamped to 0"),
            );
            0
        } else {
            dur_ns
        };
        let name_id = match ev.name {
            None => {
                diags.add(
                    "missing_field",
                    here(),
                    "event without `name` named \"(unnamed)\"",
                );
                strings.intern("(unnamed)")
            }
            Some(raw_name) => match self.name_cache.get(raw_name) {
                Some(&(id, replaced)) => {
                    if replaced {
                        diags.add(
                            "invalid_utf8",
                            here(),
                            "invalid UTF-8 in `name` replaced with U+FFFD",
                        );
                    }
                    id
                }
                None => match string_value(raw_name) {
                    Some((n, replaced)) => {
                        if replaced {
                            diags.add(
                                "invalid_utf8",
                                here(),
                                "invalid UTF-8 in `name` replaced with U+FFFD",
                            );
                        }
                        let id = strings.intern(&n);
                        self.name_cache.insert(raw_name.into(), (id, replaced));
                        id
                    }
                    None => {
                        return Err(EventError {
                            index,
                            offset,
                            message: format!(
                                "field `name` must be a string, found {}",
                                clip(&String::from_utf8_lossy(raw_name))
                            ),
                        })
                    }
                },
            },
        };
        let name: &str = strings.get(name_id);
        let args = match (ev.args, ev.args_raw) {
            (Some(a), _) => a,
            (None, None) => ArgFields::default(),
            (None, Some(a)) => {
                return Err(EventError {
                    index,
                    offset,
                    message: format!(
                        "field `args` must be an object, found {}",
                        clip(&String::from_utf8_lossy(a))
                    ),
                })
            }
        };
        let tid = ev.tid.map(thread_id_of).unwrap_or(0);
        let external_id = args.external_id.and_then(u64_of).filter(|&x| x != 0);
        match cat {
            Cat::Kernel | Cat::Memcpy | Cat::Memset => {
                let correlation = match args.correlation.and_then(u64_of) {
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
                let device = args
                    .device
                    .and_then(u64_of)
                    .or_else(|| ev.pid.and_then(u64_of))
                    .unwrap_or(0) as u32;
                let stream = args.stream.and_then(u64_of).unwrap_or(tid);
                let kind = match cat {
                    Cat::Kernel => GpuKind::Kernel,
                    Cat::Memcpy => GpuKind::Memcpy,
                    _ => GpuKind::Memset,
                };
                let geometry = (kind == GpuKind::Kernel).then(|| KernelGeometry {
                    grid: dim3(args.grid),
                    block: dim3(args.block),
                    registers_per_thread: args.registers.and_then(u64_of).unwrap_or(0) as u32,
                    shared_memory: args.shared_memory.and_then(u64_of).unwrap_or(0) as u32,
                });
                let memcpy_kind = if kind == GpuKind::Memcpy {
                    memcpy_kind_of(name, args.kind)
                } else {
                    MemcpyKind::Unknown
                };
                self.gpu.push(GpuRec {
                    kind,
                    name: name_id,
                    device,
                    stream,
                    ts_ns,
                    dur_ns,
                    correlation,
                    external_id,
                    geometry,
                    bytes: args.bytes.and_then(u64_of),
                    memcpy_kind,
                    event_index: index,
                });
            }
            Cat::Runtime => {
                if name.starts_with("hip") {
                    self.rocm = true;
                }
                let correlation = args.correlation.and_then(u64_of).unwrap_or(0);
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
                        api: name_id,
                        tid,
                        ts_ns,
                        dur_ns,
                        external_id,
                        size: args.size.and_then(u64_of),
                        index,
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
                let collective = args.collective_name.map(|c| {
                    Box::new(CollectiveInfo {
                        collective: text(Some(c)),
                        dtype: text(args.dtype),
                        in_nelems: args.in_nelems.and_then(u64_of),
                        out_nelems: args.out_nelems.and_then(u64_of),
                        group_size: args.group_size.and_then(u64_of).map(|g| g as u32),
                        process_group: text(args.process_group),
                    })
                });
                // Only a launch that names its kernel file can be found in a cache.
                let compiled = args.kernel_file.map(|f| {
                    Box::new(kc_ir::CompiledLaunch {
                        op: kc_ir::OpId(0),
                        backend: text(args.kernel_backend),
                        kernel_file: text(Some(f)),
                        num_warps: args.num_warps.and_then(u64_of).map(|x| x as u32),
                        num_stages: args.num_stages.and_then(u64_of).map(|x| x as u32),
                        kwargs: text(args.kernel_kwargs),
                        resolution: kc_ir::Resolution::NoCache,
                    })
                });
                self.ops.push(OpRec {
                    name: name_id,
                    kind: if cat == Cat::Op {
                        OpKind::Op
                    } else {
                        OpKind::Annotation
                    },
                    tid,
                    ts_ns,
                    dur_ns,
                    external_id: external_id.unwrap_or(0),
                    record_function_id: args.record_function_id.and_then(u64_of),
                    sequence_number: args.sequence_number.and_then(i64_of),
                    args_blob,
                    collective,
                    compiled,
                    index,
                });
            }
            Cat::CudaSync => {
                let neg1 =
                    |v: Option<&[u8]>| v.and_then(i64_of).filter(|&x| x >= 0).map(|x| x as u64);
                let kind = text(args.cuda_sync_kind);
                self.cuda_syncs.push(CudaSyncRec {
                    kind: if kind.is_empty() {
                        name.to_string()
                    } else {
                        kind
                    },
                    ts_ns,
                    stream: neg1(args.stream),
                    wait_on_stream: neg1(args.wait_on_stream),
                    record_correlation: neg1(args.wait_on_cuda_event_record_corr_id),
                    correlation: args.correlation.and_then(u64_of).unwrap_or(0),
                });
            }
            Cat::Flow | Cat::Other => {}
        }
        Ok(())
    }

    /// A precise message for an event the fast reader rejected, from serde_json.
    fn err(&self, index: u64, offset: u64, bytes: &[u8]) -> EventError {
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first != Some(b'{') {
            return EventError {
                index,
                offset,
                message: format!(
                    "event is not a JSON object: {}",
                    clip(&String::from_utf8_lossy(bytes))
                ),
            };
        }
        let lossy = String::from_utf8_lossy(bytes);
        match serde_json::from_str::<serde::de::IgnoredAny>(&lossy) {
            Err(e) => {
                // serde_json counts lines and columns inside the event; make a file offset.
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
                let msg = e.to_string();
                let msg = msg.split(" at line").next().unwrap_or(&msg).to_string();
                EventError {
                    index,
                    offset: offset + (at + e.column().saturating_sub(1)) as u64,
                    message: format!("malformed event: {msg}"),
                }
            }
            Ok(_) => EventError {
                index,
                offset,
                message: "malformed event object".into(),
            },
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
