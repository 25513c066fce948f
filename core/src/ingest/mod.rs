//! `kc ingest`: reads Kineto/CUPTI Chrome traces (`.json`, `.json.gz`, one file per rank or
//! a directory of them), optional shapes (Execution Trace or JSONL shape log) and the values
//! of the model's integer and boolean inputs (a values file) into a [`KernelGraph`], and
//! writes it as a `.kcir` file for `kc lower`.
//!
//! Invariant: ingest either returns a graph that passes `kc_ir::verify` together with its
//! diagnostics, or one [`IngestError`] naming the file and the byte offset or event index
//! of the problem. It never panics on input.

pub mod args;
pub mod build;
pub mod capture;
pub mod fields;
pub mod inductor;
pub mod kineto;
pub mod number;
pub mod scan;
pub mod shapes;
mod stream;
pub mod summary;
pub mod twin;
pub mod values;

use crate::diag::{Diagnostic, Diagnostics};
use crate::envelope::{self, EnvelopeError, Kind};
use build::RankInput;
use kc_ir::{graph::DeviceProps, ArgsSource, Interner, KernelGraph, RankInfo};
use kineto::FileRecords;
use scan::{EventScanner, ScanError};
use serde_json::Value;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use stream::*;
/// The `.kcir` graph file. Version 2 appended tensor identities and the dataflow to the
/// graph, version 3 its compiled-kernel launches and binaries, version 4 its recorded
/// values; older graphs are still read (those fields empty).
pub use stream::{ingest_bytes, Source};

pub const GRAPH_FILE: Kind = Kind {
    magic: *b"KCIRGRPH",
    version: 4,
    what: "graph",
};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: byte {offset}: {message}")]
    Syntax {
        path: String,
        offset: u64,
        message: String,
    },
    #[error("{path}: event {index} (byte {offset}): {message}")]
    Event {
        path: String,
        index: u64,
        offset: u64,
        message: String,
    },
    #[error("{path}: not a trace: {why}")]
    NotATrace { path: String, why: String },
    #[error("{path}: no GPU activity: {why}")]
    NoGpuActivity { path: String, why: String },
    #[error("{0}")]
    Shapes(#[from] shapes::ShapesError),
    #[error("{0}")]
    Values(#[from] values::ValuesError),
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error(transparent)]
    File(#[from] EnvelopeError),
    #[error("internal error: the built graph failed verification: {0}")]
    Verify(#[from] kc_ir::VerifyError),
}

#[derive(Default, Clone)]
pub struct IngestOptions {
    pub shapes: Option<PathBuf>,
    /// The values the model's integer tensors held (`NAME.values.bin`, written by
    /// traces/capture.py beside the Execution Trace given as `shapes`).
    pub values: Option<PathBuf>,
    /// An eager trace of the same model and step, to link the kernels a CUDA graph replay
    /// launched (which have no op) to the ops of their eager twins.
    pub eager: Option<PathBuf>,
    /// A profiler trace of the capture of the CUDA graph the trace replays, to link each
    /// kernel the graph launched to the op that launched it during the capture. With it,
    /// `shapes` is the capture's Execution Trace (it describes the capture's ops).
    pub capture: Option<PathBuf>,
    /// Read several files as the ranks of one run even where they do not say so (no
    /// `distributedInfo`, another world size, another GPU model); without it such files
    /// are refused.
    pub as_ranks: bool,
    /// Internal: the trace is a capture, so its launches without a GPU activity become
    /// activities ([`capture::synthesize_launches`]).
    pub is_capture: bool,
    /// The Inductor cache the trace's Triton kernels were compiled into (a directory or a
    /// `.tar.gz` of one).
    pub inductor_cache: Option<PathBuf>,
    /// Without `inductor_cache`, look in `TORCHINDUCTOR_CACHE_DIR` or
    /// `/tmp/torchinductor_$USER` (when the trace launched compiled kernels and that
    /// directory exists), as the command line does.
    pub default_inductor_cache: bool,
    /// Show a progress bar on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
}

/// Expands directories into their trace files (sorted by name) and keeps files as given.
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, IngestError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|source| IngestError::Io {
                path: p.display().to_string(),
                source,
            })?;
            let mut files: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let n = f.to_string_lossy();
                    (n.ends_with(".json") || n.ends_with(".json.gz")) && !n.contains(".et.json")
                })
                .collect();
            files.sort();
            // Profiler output is named `*.pt.trace.json[.gz]`; when a directory has such
            // files, other JSON beside them (reference numbers, configs) is not a trace.
            let is_profiler_output = |f: &PathBuf| f.to_string_lossy().contains(".pt.trace.json");
            if files.iter().any(is_profiler_output) {
                files.retain(is_profiler_output);
            }
            if files.is_empty() {
                return Err(IngestError::Input {
                    path: p.display().to_string(),
                    message: "directory holds no .json or .json.gz trace".into(),
                });
            }
            out.extend(files);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Counts compressed bytes read, for progress over gzip input.
struct Counting<R> {
    inner: R,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Raw bytes hashed for a file's identity: the CRC32 of its first MiB.
const HEAD_CRC_BYTES: usize = 1 << 20;

/// Hashes the first [`HEAD_CRC_BYTES`] raw bytes that pass through, so a file read once
/// (a pipe, stdin) still gets the identity a results file records.
struct HeadCrc<R> {
    inner: R,
    seen: usize,
    crc: std::sync::Arc<std::sync::Mutex<crc32fast::Hasher>>,
}

impl<R: Read> Read for HeadCrc<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.seen < HEAD_CRC_BYTES {
            let k = n.min(HEAD_CRC_BYTES - self.seen);
            if let Ok(mut h) = self.crc.lock() {
                h.update(&buf[..k]);
            }
            self.seen += k;
        }
        Ok(n)
    }
}

/// An input opened once: its bytes, size (0 when unknown, as for a pipe), the count of raw
/// bytes read (for progress) and the hasher of its head (fed as a stream is read, at once
/// for a mapped file).
struct Opened {
    source: Source,
    size: u64,
    counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    head_crc: std::sync::Arc<std::sync::Mutex<crc32fast::Hasher>>,
}

/// The CRC32 of the head a hasher was fed (the first MiB, once the input has been read).
fn crc32_of(h: &std::sync::Mutex<crc32fast::Hasher>) -> u32 {
    h.lock().map(|h| h.clone().finalize()).unwrap_or(0)
}

/// Whether a path names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens a trace exactly once, so pipes, `/dev/stdin` and `<(zcat ...)` work: a regular
/// plain-JSON file is mapped into memory (no copying, pages released as they are read);
/// anything else is read as a stream, through a gzip decoder when its first two bytes are
/// the gzip magic (peeked, then put back in front of the stream).
fn open_input(path: &Path) -> Result<Opened, IngestError> {
    let p = path.display().to_string();
    let io = |source| IngestError::Io {
        path: p.clone(),
        source,
    };
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let crc = std::sync::Arc::new(std::sync::Mutex::new(crc32fast::Hasher::new()));
    let (mut raw, size): (Box<dyn Read + Send>, u64) = if is_stdin(path) {
        (Box::new(std::io::stdin()), 0)
    } else {
        let f = File::open(path).map_err(io)?;
        let meta = f.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(IngestError::Input {
                path: p,
                message: "is a directory".into(),
            });
        }
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: the map is read-only; kc assumes nobody truncates the trace while it
            // is being ingested (a truncated file under a map would fault).
            if let Ok(m) = unsafe { memmap2::Mmap::map(&f) } {
                if !m.starts_with(&[0x1f, 0x8b]) {
                    if let Ok(mut h) = crc.lock() {
                        h.update(&m[..m.len().min(HEAD_CRC_BYTES)]);
                    }
                    return Ok(Opened {
                        source: Source::Mapped(std::sync::Arc::new(m)),
                        size: meta.len(),
                        counter,
                        head_crc: crc,
                    });
                }
            }
        }
        (Box::new(f), if meta.is_file() { meta.len() } else { 0 })
    };
    let mut magic = Vec::with_capacity(2);
    (&mut raw).take(2).read_to_end(&mut magic).map_err(io)?;
    let gz = magic == [0x1f, 0x8b];
    let stream = HeadCrc {
        inner: Counting {
            inner: std::io::Cursor::new(magic).chain(raw),
            count: counter.clone(),
        },
        seen: 0,
        crc: crc.clone(),
    };
    let reader: Box<dyn Read + Send> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 20,
            stream,
        )))
    } else {
        Box::new(stream)
    };
    Ok(Opened {
        source: Source::Reader(reader),
        size,
        counter,
        head_crc: crc,
    })
}

fn file_name(path: &Path) -> String {
    if is_stdin(path) {
        return "stdin".into();
    }
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Python-repr dicts ("{'rank': 0, 'ok': True}") as some exporters write them, to JSON.
fn python_repr_to_json(s: &str) -> Option<Value> {
    let mut out = String::with_capacity(s.len());
    let mut in_str = false;
    for c in s.chars() {
        match c {
            '\'' => {
                in_str = !in_str;
                out.push('"');
            }
            '"' if in_str => out.push_str("\\\""),
            _ => out.push(c),
        }
    }
    let out = out
        .replace(": True", ": true")
        .replace(": False", ": false")
        .replace(": None", ": null");
    serde_json::from_str(&out).ok()
}

fn header_value(raw: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(raw).ok()?;
    match v {
        Value::String(s) => python_repr_to_json(&s),
        other => Some(other),
    }
}

/// Several files are read as the ranks of one distributed run. Files that do not look like
/// that (no `distributedInfo`, a world size other than the number of files, different GPU
/// models) are most likely unrelated traces that happen to share a folder: said, so a
/// mixed folder is never silently read as one job.
/// Why the files do not look like ranks of one run (none when they do, or when there is
/// one file): files without `distributedInfo`, a world size other than the file count,
/// GPUs of different models.
fn unrelated_files(inputs: &[RankInput], explicit: &[Option<u32>]) -> Vec<(String, String)> {
    let mut why = Vec::new();
    if inputs.len() < 2 {
        return why;
    }
    let n = inputs.len() as u32;
    let missing: Vec<&str> = inputs
        .iter()
        .zip(explicit)
        .filter(|(_, r)| r.is_none())
        .map(|(i, _)| i.location.as_str())
        .collect();
    if !missing.is_empty() {
        why.push((
            "inputs".to_string(),
            format!(
                "{} of {n} files carry no `distributedInfo` (e.g. {}): they look like unrelated \
                 traces, not ranks of one run",
                missing.len(),
                missing[0]
            ),
        ));
    }
    for i in inputs {
        if let Some(w) = i.info.world_size.filter(|&w| w != n) {
            why.push((
                i.location.clone(),
                format!("says world size {w}, but {n} files were given"),
            ));
        }
    }
    let gpu = |i: &RankInput| i.info.devices.first().map(|d| d.name.clone());
    if let Some(other) = inputs.iter().find(|i| gpu(i) != gpu(&inputs[0])) {
        why.push((
            other.location.clone(),
            format!(
                "recorded on {}, {} on {}: ranks of one run share a GPU model",
                gpu(other).unwrap_or_else(|| "an unnamed GPU".into()),
                inputs[0].location,
                gpu(&inputs[0]).unwrap_or_else(|| "an unnamed GPU".into())
            ),
        ));
    }
    why
}

/// Ingests trace files (one per rank) into one graph.
pub fn ingest(
    paths: &[PathBuf],
    opts: &IngestOptions,
) -> Result<(KernelGraph, Vec<Diagnostic>), IngestError> {
    let files = expand_inputs(paths)?;
    for (i, a) in files.iter().enumerate() {
        if let Some(b) = files[..i].iter().find(|b| crate::files::same_file(a, b)) {
            return Err(IngestError::Input {
                path: a.display().to_string(),
                message: format!(
                    "the same file as {} given again: one file is one rank, and a rank cannot be read twice",
                    b.display()
                ),
            });
        }
    }
    let mut strings = Interner::new();
    let mut diags = Diagnostics::default();
    let bar = opts.progress.then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} ingest {msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    });
    let mut inputs = Vec::new();
    let mut explicit = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let (info, mut recs, rank) =
            read_file(f, i as u32, &mut strings, &mut diags, bar.as_ref())?;
        if opts.is_capture {
            capture::synthesize_launches(&mut recs, &mut strings);
        }
        explicit.push(rank);
        inputs.push(RankInput {
            location: info.source.clone(),
            info,
            recs,
        });
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // Several files are read as the ranks of one run: files that do not look like that are
    // refused (a folder of unrelated models is not a job), unless the caller says they are.
    let unrelated = unrelated_files(&inputs, &explicit);
    if !unrelated.is_empty() && !opts.as_ranks {
        let list: Vec<String> = unrelated.iter().map(|(w, m)| format!("{w}: {m}")).collect();
        return Err(IngestError::Input {
            path: paths
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            message: format!(
                "{} files given, read as the ranks of one run, but {}; ingest one trace at a \
                 time, or pass --as-ranks if they are ranks of one run all the same",
                inputs.len(),
                list.join("; ")
            ),
        });
    }
    for (w, m) in unrelated {
        diags.add("unrelated_ranks", w, m);
    }
    // Ranks must be distinct: fall back to file order when they are not.
    let mut ranks: Vec<u32> = inputs.iter().map(|i| i.info.rank).collect();
    ranks.sort();
    ranks.dedup();
    if ranks.len() != inputs.len() {
        diags.add(
            "duplicate_rank",
            "inputs",
            "several files claim the same rank (or none does); ranks follow the file order",
        );
        for (i, inp) in inputs.iter_mut().enumerate() {
            inp.info.rank = i as u32;
        }
    }
    let mut graph = build::build(inputs, strings, &mut diags);
    if let Some(v) = &opts.values {
        if opts.shapes.is_none() {
            return Err(IngestError::Input {
                path: v.display().to_string(),
                message: "recorded values name the nodes of the Execution Trace they were recorded with: give that trace with --shapes (with --capture, the capture's)".into(),
            });
        }
    }
    // With a capture, the shapes describe the capture's ops (linked below), not this trace's.
    let own_shapes = opts.shapes.as_ref().filter(|_| opts.capture.is_none());
    if let Some(shapes_path) = own_shapes {
        let sp = shapes_path.display().to_string();
        let (records, source) = read_shapes(shapes_path)?;
        let merged =
            shapes::merge(&mut graph, &records, source, &mut diags).map_err(|message| {
                IngestError::Input {
                    path: sp.clone(),
                    message,
                }
            })?;
        let with_tensors = shapes::attach_tensors(&mut graph, &records);
        if merged == 0 && with_tensors == 0 {
            diags.add("shapes_unused", sp, "no op received shapes from this file");
        }
        if let Some(values_path) = &opts.values {
            let file = read_values(values_path)?;
            let by_node = shapes::ops_by_et_node(&graph, &records);
            let attached = values::attach(
                &mut graph,
                file,
                &by_node,
                &file_name(values_path),
                &mut diags,
            );
            if attached == 0 {
                diags.add(
                    "values_unused",
                    values_path.display().to_string(),
                    "no op input received recorded values from this file",
                );
            }
        }
        build::reassign_signatures(&mut graph);
    }
    if let Some(capture_path) = &opts.capture {
        let capture_opts = IngestOptions {
            shapes: opts.shapes.clone(),
            // Keyed by the capture ET's nodes: they go with the capture's ops.
            values: opts.values.clone(),
            is_capture: true,
            progress: opts.progress,
            ..Default::default()
        };
        let (captured, _) = ingest(std::slice::from_ref(capture_path), &capture_opts)?;
        capture::link_from_capture(&mut graph, &captured, &file_name(capture_path), &mut diags)
            .map_err(|message| IngestError::Input {
                path: capture_path.display().to_string(),
                message,
            })?;
        build::reassign_signatures(&mut graph);
    }
    if let Some(eager_path) = &opts.eager {
        let eager_opts = IngestOptions {
            progress: opts.progress,
            ..Default::default()
        };
        let (eager, _) = ingest(std::slice::from_ref(eager_path), &eager_opts)?;
        if eager.graph.node_weights().all(|n| !n.link.is_linked()) {
            return Err(IngestError::Input {
                path: eager_path.display().to_string(),
                message: "no GPU activity of this trace is linked to an op: it cannot lend ops \
                          (an eager trace recorded with CPU activities is needed)"
                    .into(),
            });
        }
        twin::link_from_eager(&mut graph, &eager, &file_name(eager_path), &mut diags)
            .check()
            .map_err(|message| IngestError::Input {
                path: eager_path.display().to_string(),
                message,
            })?;
        build::reassign_signatures(&mut graph);
    }
    if !graph.compiled_launches.is_empty() {
        let given = opts.inductor_cache.is_some();
        let mut default = || match opts
            .default_inductor_cache
            .then(inductor::default_cache)
            .flatten()
        {
            Some(Ok(p)) => Some(p),
            Some(Err((p, why))) => {
                diags.add(
                    "inductor_cache_untrusted",
                    p.display().to_string(),
                    format!("the default Inductor cache is not used: {why}; name a cache you trust with --inductor-cache"),
                );
                None
            }
            None => None,
        };
        let cache = opts.inductor_cache.clone().or_else(&mut default);
        if let Some(cache) = cache {
            if !given {
                diags.add(
                    "inductor_cache_default",
                    cache.display().to_string(),
                    "no --inductor-cache given: compiled kernels are looked up in this default Inductor cache",
                );
            }
            inductor::resolve_all(&mut graph, &cache, &mut diags).map_err(|message| {
                IngestError::Input {
                    path: cache.display().to_string(),
                    message,
                }
            })?;
        }
    }
    for n in graph.graph.node_weights() {
        if !n.link.is_linked() {
            diags.add(
                "unlinked_gpu_op",
                format!("rank {} correlation {}", n.rank, n.correlation),
                format!("{}: {}", graph.strings.get(n.kind.name()), n.link.as_str()),
            );
        }
    }
    kc_ir::verify(&graph)?;
    Ok((graph, diags.into_vec()))
}

/// Reads and parses a values file, never past [`values::MAX_VALUES_BYTES`].
fn read_values(path: &Path) -> Result<values::ValuesFile, IngestError> {
    let p = path.display().to_string();
    let io = |source| IngestError::Io {
        path: p.clone(),
        source,
    };
    let f = File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    f.take(values::MAX_VALUES_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > values::MAX_VALUES_BYTES {
        return Err(IngestError::Input {
            path: p,
            message: format!(
                "values file larger than {} MiB (refused at byte {}); capture.py bounds what it records far below this",
                values::MAX_VALUES_BYTES >> 20,
                values::MAX_VALUES_BYTES
            ),
        });
    }
    Ok(values::parse(&bytes, &p)?)
}

/// The largest shape file (Execution Trace or JSONL shape log, decompressed) kc reads: an
/// ET is parsed whole, at about 15 times its size in memory.
pub const MAX_SHAPES_BYTES: u64 = 192 << 20;

fn read_shapes(path: &Path) -> Result<(Vec<shapes::ShapeRecord>, ArgsSource), IngestError> {
    let p = path.display().to_string();
    let io = |source| IngestError::Io {
        path: p.clone(),
        source,
    };
    // A mapped file is read where it lies; a stream is read into memory once, never past
    // the limit (a gzip bomb, /dev/zero or a FIFO fed forever is refused at the cap).
    let too_big = |at: u64| {
        IngestError::Input {
        path: p.clone(),
        message: format!(
            "shape file larger than {} MiB (refused at byte {at}); an Execution Trace or shape log of a model step is far smaller",
            MAX_SHAPES_BYTES >> 20
        ),
    }
    };
    let mut source = open_input(path)?.source;
    let mut read = Vec::new();
    let bytes: &[u8] = match &mut source {
        Source::Mapped(m) => {
            if m.len() as u64 > MAX_SHAPES_BYTES {
                return Err(too_big(MAX_SHAPES_BYTES));
            }
            m
        }
        Source::Reader(r) => {
            r.take(MAX_SHAPES_BYTES + 1)
                .read_to_end(&mut read)
                .map_err(io)?;
            if read.len() as u64 > MAX_SHAPES_BYTES {
                return Err(too_big(MAX_SHAPES_BYTES));
            }
            &read
        }
    };
    let text = std::str::from_utf8(bytes).map_err(|e| IngestError::Input {
        path: p.clone(),
        message: format!(
            "not text (invalid UTF-8 at byte {}); --shapes takes a PyTorch Execution Trace or a kc JSONL shape log",
            e.valid_up_to()
        ),
    })?;
    let trimmed = text.trim_start();
    // A Kineto trace given here by mistake: its header names it.
    // Bytes, not a str slice: 64 KiB may end inside a multi-byte character.
    let head = &trimmed.as_bytes()[..trimmed.len().min(1 << 16)];
    let has = |needle: &[u8]| memchr::memmem::find(head, needle).is_some();
    if has(b"\"traceEvents\"") && !has(b"\"nodes\"") {
        return Err(IngestError::Input {
            path: p,
            message: "this is a Kineto (profiler) trace, not shapes: give it as a TRACE; \
                      --shapes takes the Execution Trace recorded with it, or a kc JSONL shape log"
                .into(),
        });
    }
    // An Execution Trace is one JSON object with `nodes`; a shape log is JSON lines.
    if trimmed.starts_with('{') {
        if let Ok(doc) = serde_json::from_str::<Value>(text) {
            if doc.get("nodes").is_some() {
                return Ok((
                    shapes::from_execution_trace(&doc, &p)?,
                    ArgsSource::ExecutionTrace,
                ));
            }
            // One JSON document that is no Execution Trace (a shape log is one record per
            // line, and one record alone has a `name`): say what it is not, and what it
            // looks like where that is known.
            if doc.get("name").is_none() {
                let looks = if doc.get("results").is_some() && doc.get("how").is_some() {
                    " (it looks like traces/capture.py's reference.json: give that with --reference)"
                } else {
                    ""
                };
                return Err(IngestError::Input {
                    path: p,
                    message: format!(
                        "one JSON object without `nodes`: not a PyTorch Execution Trace, nor a kc \
                         JSONL shape log{looks}"
                    ),
                });
            }
        }
    }
    Ok((shapes::from_jsonl(text, &p)?, ArgsSource::ShapeLog))
}

/// The graph file `kc ingest` writes without `-o`: `NAME.kcir` in the working directory
/// (as compilers and `git clone` write where they are run, never into the input's folder,
/// which may be a shared data set the user does not own). NAME is the trace's file name
/// without `.json[.gz]` (`trace.pt.trace.json.gz` -> `trace.pt.trace.kcir`), a directory's
/// name, or `stdin`.
pub fn default_graph_path(input: &Path) -> PathBuf {
    if is_stdin(input) {
        return PathBuf::from("stdin.kcir");
    }
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| {
            std::fs::canonicalize(input)
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
        .unwrap_or_else(|| "trace".into());
    let stem = name
        .strip_suffix(".json.gz")
        .or_else(|| name.strip_suffix(".json"))
        .or_else(|| name.strip_suffix(".gz"))
        .unwrap_or(&name);
    PathBuf::from(format!("{stem}.kcir"))
}

pub fn write_graph(g: &KernelGraph, path: &Path) -> Result<(), IngestError> {
    Ok(envelope::write_streamed(&GRAPH_FILE, g, path)?)
}

/// Decodes a graph file's bytes, of this version or an older one.
pub fn decode_graph(bytes: &[u8], path: &str) -> Result<KernelGraph, EnvelopeError> {
    let no_values = envelope::encode_fragment(&kc_ir::RecordedValues::default());
    let mut no_compiled = envelope::encode_fragment(&(
        Vec::<kc_ir::CompiledLaunch>::new(),
        Vec::<kc_ir::CompiledKernel>::new(),
    ));
    no_compiled.extend_from_slice(&no_values);
    let mut v1 =
        envelope::encode_fragment(&(Vec::<kc_ir::OpTensors>::new(), kc_ir::Dataflow::default()));
    v1.extend_from_slice(&no_compiled);
    envelope::decode_appended(
        &GRAPH_FILE,
        bytes,
        path,
        &[(1, &v1), (2, &no_compiled), (3, &no_values)],
    )
}

pub fn read_graph(path: &Path) -> Result<KernelGraph, EnvelopeError> {
    let bytes = envelope::read_bytes(&GRAPH_FILE, path)?;
    let g: KernelGraph = decode_graph(&bytes, &path.display().to_string())?;
    kc_ir::verify(&g).map_err(|e| EnvelopeError::Corrupt {
        path: path.display().to_string(),
        what: "graph",
        why: e.to_string(),
    })?;
    Ok(g)
}
