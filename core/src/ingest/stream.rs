//! The reading pipeline of `kc ingest`: a splitter thread finds event boundaries in
//! 4 MiB chunks and deals batches of events to two parse workers, whose parts are appended
//! in event order; plain files are mapped and their pages released once read, streams
//! (gzip, stdin, pipes) are read through a reader.
//!
//! Invariant: the result never depends on which worker read which event (every record
//! carries its event index), and memory stays bounded by the batches in flight.

use super::*;

/// Events split from the input, copied into one buffer: (start, len, byte offset, index).
pub(crate) struct Batch {
    /// Copied events (read input), or nothing when `mapped` holds them in place.
    data: Vec<u8>,
    mapped: Option<std::sync::Arc<memmap2::Mmap>>,
    /// Bytes of event text in the batch.
    bytes: usize,
    events: Vec<(usize, u32, u64, u64)>,
    /// Flow (`s`/`f`/`t`) and other non-`X` events the splitter counted but did not copy.
    skipped_flows: u64,
    skipped_other: u64,
}

/// The phase of an event when `"ph"` is among its first bytes (as every exporter writes
/// it), so the splitter can drop flow and metadata events kc does not read.
pub(crate) fn quick_phase(ev: &[u8]) -> Option<u8> {
    let head = &ev[..ev.len().min(48)];
    let at = memchr::memmem::find(head, b"\"ph\"")? + 4;
    let mut i = at;
    while i < head.len() && matches!(head[i], b' ' | b':') {
        i += 1;
    }
    (head.get(i) == Some(&b'"') && head.get(i + 2) == Some(&b'"')).then(|| head[i + 1])
}

pub(crate) const BATCH_BYTES: usize = 2 << 20;

/// Gives back the resident pages of a mapped batch once its events are read, so peak
/// memory stays far below the file size. Only pages wholly inside the batch's range are
/// released; the file stays mapped and a page read again is simply faulted back in.
pub(crate) fn release_pages(batch: &Batch) {
    const PAGE: usize = 4096;
    let (Some(m), Some(first), Some(last)) =
        (&batch.mapped, batch.events.first(), batch.events.last())
    else {
        return;
    };
    let from = first.0.div_ceil(PAGE) * PAGE;
    let to = (last.0 + last.1 as usize) / PAGE * PAGE;
    if to > from {
        // SAFETY: MADV_DONTNEED on a read-only shared file mapping drops resident pages;
        // later reads fault them in again from the page cache, so no data is lost.
        let _ = unsafe {
            m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
        };
    }
}

/// Threads that read event fields (besides the splitter). Two match the two cores kc is
/// measured on; more only add merge work there.
pub(crate) const PARSE_WORKERS: usize = 2;

pub(crate) type WorkerResult = Result<(kineto::WorkerPart, Diagnostics), (u64, IngestError)>;

/// A parse worker: reads every event of the batches it is dealt, in order. On a bad event
/// it stops and returns the error with the event index, so the earliest error in the
/// file is the one reported whichever worker met it.
pub(crate) fn parse_batches(
    rx: std::sync::mpsc::Receiver<Result<Batch, ScanError>>,
    p: &str,
    name: &str,
    bar: Option<&indicatif::ProgressBar>,
    counter: Option<&std::sync::Arc<std::sync::atomic::AtomicU64>>,
    recycle: std::sync::mpsc::Sender<Batch>,
) -> WorkerResult {
    let mut recs = FileRecords::default();
    let mut strings = Interner::new();
    let mut diags = Diagnostics::default();
    for batch in rx.iter() {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => return Err((u64::MAX - 1, scan_error(e, p, recs.events))),
        };
        recs.events += batch.skipped_flows + batch.skipped_other;
        recs.flows += batch.skipped_flows;
        for &(start, len, offset, index) in &batch.events {
            let bytes = match &batch.mapped {
                Some(m) => &m[start..start + len as usize],
                None => &batch.data[start..start + len as usize],
            };
            recs.add_event(bytes, index, offset, name, &mut strings, &mut diags)
                .map_err(|e| {
                    (
                        e.index,
                        IngestError::Event {
                            path: p.to_string(),
                            index: e.index,
                            offset: e.offset,
                            message: e.message,
                        },
                    )
                })?;
        }
        if let (Some(b), Some(c)) = (bar, counter) {
            b.set_position(c.load(std::sync::atomic::Ordering::Relaxed));
        }
        release_pages(&batch);
        // The splitter may have finished already; then the buffer is simply dropped.
        let _ = recycle.send(batch);
    }
    recs.finish();
    Ok((kineto::WorkerPart { recs, strings }, diags))
}

/// The bytes of a trace: a (decompressing) reader, or the file mapped into memory.
pub enum Source {
    Reader(Box<dyn Read + Send>),
    Mapped(std::sync::Arc<memmap2::Mmap>),
}

/// Splits the input into batches until the end, an error, or the receiver hanging up.
pub(crate) fn split_batches(
    source: Source,
    txs: Vec<std::sync::mpsc::SyncSender<Result<Batch, ScanError>>>,
    recycled: std::sync::mpsc::Receiver<Batch>,
    progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> SplitEnd {
    let mut turn = 0usize;
    let mut send = |b: Result<Batch, ScanError>| -> bool {
        let ok = txs[turn % txs.len()].send(b).is_ok();
        turn += 1;
        ok
    };
    let (mut scanner, mapped) = match source {
        Source::Reader(r) => (EventScanner::new(r), None),
        Source::Mapped(m) => {
            let empty: Box<dyn Read + Send> = Box::new(std::io::empty());
            (EventScanner::mapped(m.clone(), empty), Some(m))
        }
    };
    let new_batch = || match recycled.try_recv() {
        Ok(mut b) => {
            b.data.clear();
            b.events.clear();
            b.bytes = 0;
            b.mapped = mapped.clone();
            b.skipped_flows = 0;
            b.skipped_other = 0;
            b
        }
        Err(_) => Batch {
            data: Vec::with_capacity(if mapped.is_some() {
                0
            } else {
                BATCH_BYTES + 4096
            }),
            mapped: mapped.clone(),
            bytes: 0,
            events: Vec::with_capacity(16384),
            skipped_flows: 0,
            skipped_other: 0,
        },
    };
    let mut batch = new_batch();
    loop {
        match scanner.next_event() {
            Ok(Some(ev)) => {
                match quick_phase(ev.bytes) {
                    Some(b's' | b'f' | b't') => {
                        batch.skipped_flows += 1;
                        continue;
                    }
                    Some(b'M' | b'i' | b'I' | b'C') => {
                        batch.skipped_other += 1;
                        continue;
                    }
                    _ => {}
                }
                // Mapped input stays where it is; read input is copied into the batch.
                let start = if batch.mapped.is_some() {
                    ev.start
                } else {
                    batch.data.extend_from_slice(ev.bytes);
                    batch.data.len() - ev.bytes.len()
                };
                batch.bytes += ev.bytes.len();
                batch
                    .events
                    .push((start, ev.bytes.len() as u32, ev.offset, ev.index));
                if batch.bytes >= BATCH_BYTES {
                    if mapped.is_some() {
                        progress.store(scanner.position(), std::sync::atomic::Ordering::Relaxed);
                    }
                    let full = std::mem::replace(&mut batch, new_batch());
                    if !send(Ok(full)) {
                        break;
                    }
                }
            }
            Ok(None) => {
                if !batch.events.is_empty() || batch.skipped_flows + batch.skipped_other > 0 {
                    send(Ok(batch));
                }
                break;
            }
            Err(e) => {
                if !batch.events.is_empty() && !send(Ok(batch)) {
                    break;
                }
                send(Err(e));
                break;
            }
        }
    }
    SplitEnd {
        header: std::mem::take(&mut scanner.header),
        saw_events: scanner.saw_events(),
        repeated_events_key: scanner.repeated_events_key,
    }
}

/// What the splitter learnt of the top level once the events are dealt.
pub(crate) struct SplitEnd {
    /// Top-level keys other than `traceEvents`, with the values kc reads.
    header: Vec<(String, Vec<u8>)>,
    /// Whether a `traceEvents` array (or a bare top-level array) was found.
    saw_events: bool,
    /// `traceEvents` appeared more than once (every copy was read).
    repeated_events_key: bool,
}

pub(crate) fn scan_error(e: ScanError, p: &str, events: u64) -> IngestError {
    let p = p.to_string();
    match e {
        ScanError::Io(source) => {
            // A gzip stream that ends early surfaces as an I/O error.
            if source.kind() == std::io::ErrorKind::UnexpectedEof {
                IngestError::NotATrace {
                    path: p,
                    why: if events == 0 {
                        "compressed stream ends early (truncated .gz) before any event".into()
                    } else {
                        format!(
                            "compressed stream ends early (truncated .gz) after {events} events"
                        )
                    },
                }
            } else {
                IngestError::Io { path: p, source }
            }
        }
        ScanError::Truncated { offset, context } => IngestError::Syntax {
            path: p,
            offset,
            message: if events == 0 {
                format!("file ends inside {context} (truncated?) before any event")
            } else {
                format!("file ends inside {context} (truncated?) after {events} events")
            },
        },
        ScanError::TooLarge { offset, context } => IngestError::Syntax {
            path: p,
            offset,
            message: format!(
                "{context} larger than {} MiB, kc's limit for one event or header value (no \
                 real trace holds one that large: the file is corrupt or not a profiler trace)",
                scan::MAX_VALUE_BYTES >> 20
            ),
        },
        ScanError::NotATrace { what } => IngestError::Input {
            path: p,
            message: format!(
                "this is {what}, not a profiler trace: kc ingest reads Kineto traces (.json or \
                 .json.gz); a plan goes to kc exec or kc plan show, a graph to kc lower"
            ),
        },
        ScanError::Unexpected {
            offset,
            found,
            expected,
        } => IngestError::Syntax {
            path: p,
            offset,
            message: format!("expected {expected}, found {:?}", found as char),
        },
        ScanError::EventsNotArray { offset } => IngestError::Syntax {
            path: p,
            offset,
            message: "`traceEvents` must be an array".into(),
        },
        ScanError::Empty => IngestError::NotATrace {
            path: p,
            why: "the file is empty".into(),
        },
    }
}

/// Reads one trace file into records and rank metadata.
pub(crate) fn read_file(
    path: &Path,
    position: u32,
    strings: &mut Interner,
    diags: &mut Diagnostics,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(RankInfo, FileRecords, Option<u32>), IngestError> {
    let Opened {
        source,
        size,
        counter,
        head_crc,
    } = open_input(path)?;
    let mut r = read_stream(
        source,
        size,
        counter,
        &path.display().to_string(),
        &file_name(path),
        position,
        strings,
        diags,
        bar,
    )?;
    r.0.source_crc32 = crc32_of(&head_crc);
    Ok(r)
}

/// Ingests one trace held in memory (plain or gzip JSON), for fuzzing and embedding.
pub fn ingest_bytes(
    bytes: Vec<u8>,
    name: &str,
) -> Result<(KernelGraph, Vec<Diagnostic>), IngestError> {
    let size = bytes.len() as u64;
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let reader: Box<dyn Read + Send> = if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(std::io::Cursor::new(
            bytes,
        )))
    } else {
        Box::new(std::io::Cursor::new(bytes))
    };
    let mut strings = Interner::new();
    let mut diags = Diagnostics::default();
    let (info, recs, _) = read_stream(
        Source::Reader(reader),
        size,
        counter,
        name,
        name,
        0,
        &mut strings,
        &mut diags,
        None,
    )?;
    let graph = build::build(
        vec![RankInput {
            location: name.to_string(),
            info,
            recs,
        }],
        strings,
        &mut diags,
    );
    kc_ir::verify(&graph)?;
    Ok((graph, diags.into_vec()))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn read_stream(
    source: Source,
    size: u64,
    counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    p: &str,
    name: &str,
    position: u32,
    strings: &mut Interner,
    diags: &mut Diagnostics,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(RankInfo, FileRecords, Option<u32>), IngestError> {
    let (p, name) = (p.to_string(), name.to_string());
    if let Some(b) = bar {
        b.set_length(size);
        b.set_position(0);
        b.set_message(name.clone());
    }
    // The splitter thread finds event boundaries and deals batches round-robin to
    // PARSE_WORKERS workers (this thread is worker 0), each with its own records and
    // string table; the parts are appended and later orderings break ties on event
    // indices, so the result does not depend on which worker read which event.
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..PARSE_WORKERS {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Batch, ScanError>>(3);
        senders.push(tx);
        receivers.push(rx);
    }
    // Emptied batches come back to the splitter, so their buffers are reused instead of
    // freshly allocated (and page-faulted in) for every few MiB of input.
    let (recycle_tx, recycle_rx) = std::sync::mpsc::channel::<Batch>();
    let progress = counter.clone();
    let splitter = std::thread::spawn(move || split_batches(source, senders, recycle_rx, progress));
    let mut receivers = receivers.into_iter();
    let rx0 = receivers.next().expect("at least one worker");
    let helpers: Vec<_> = receivers
        .map(|rx| {
            let (p, name, back) = (p.clone(), name.clone(), recycle_tx.clone());
            std::thread::spawn(move || parse_batches(rx, &p, &name, None, None, back))
        })
        .collect();
    let first = parse_batches(rx0, &p, &name, bar, Some(&counter), recycle_tx);
    let mut outs = vec![first];
    for h in helpers {
        outs.push(h.join().unwrap_or_else(|_| {
            Err((
                u64::MAX,
                IngestError::Input {
                    path: p.clone(),
                    message: "a parse worker panicked".into(),
                },
            ))
        }));
    }
    let scanner_state = splitter.join();
    // The first failure in file order is the one reported.
    let mut parts = Vec::new();
    let mut failure: Option<(u64, IngestError)> = None;
    for o in outs {
        match o {
            Ok((part, d)) => {
                diags.extend(d.into_vec());
                parts.push(part);
            }
            Err((at, e)) => {
                if failure.as_ref().is_none_or(|(f, _)| at < *f) {
                    failure = Some((at, e));
                }
            }
        }
    }
    if let Some((_, f)) = failure {
        return Err(f);
    }
    let recs = FileRecords::merge(parts, strings, diags);
    let SplitEnd {
        header,
        saw_events,
        repeated_events_key,
    } = scanner_state.map_err(|_| IngestError::Input {
        path: p.clone(),
        message: "the event splitter thread panicked".into(),
    })?;
    if !saw_events {
        let keys: Vec<&str> = header.iter().map(|(k, _)| k.as_str()).take(5).collect();
        // An Execution Trace is the most common wrong input: it belongs to `--shapes`.
        let is_execution_trace = ["schema", "nodes"]
            .iter()
            .all(|k| header.iter().any(|(h, _)| h == k));
        return Err(IngestError::NotATrace {
            path: p,
            why: format!(
                "no `traceEvents` array (top-level keys: {}){}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                },
                if is_execution_trace {
                    "; this is a PyTorch Execution Trace: pass it as `--shapes FILE` beside \
                     its Kineto trace"
                } else {
                    ""
                }
            ),
        });
    }
    if recs.gpu.is_empty() {
        let cpu = recs.ops.len();
        let why = if recs.events == 0 {
            "the trace holds no events".to_string()
        } else {
            let cats: Vec<String> = recs
                .categories
                .iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .take(8)
                .collect();
            format!(
                "{} events, {cpu} CPU ops, 0 kernels/memcpys/memsets (a CPU-only trace, or GPU activities were not recorded); categories {}",
                recs.events,
                cats.join(", ")
            )
        };
        return Err(IngestError::NoGpuActivity { path: p, why });
    }
    let mut info = RankInfo {
        rank: position,
        source: name,
        source_bytes: size,
        source_crc32: 0,
        ..Default::default()
    };
    let mut explicit_rank = None;
    if repeated_events_key {
        diags.add(
            "duplicate_key",
            p.clone(),
            "`traceEvents` appears more than once at the top level: the events of every copy are read",
        );
    }
    let mut seen_keys: Vec<&str> = Vec::new();
    for (key, _) in &header {
        if seen_keys.contains(&key.as_str()) {
            diags.add(
                "duplicate_key",
                p.clone(),
                format!("top-level key `{key}` appears more than once: the last value is used"),
            );
        } else {
            seen_keys.push(key);
        }
    }
    for (key, raw) in &header {
        let Some(v) = header_value(raw) else { continue };
        match key.as_str() {
            "baseTimeNanoseconds" => info.base_time_ns = v.as_i64().unwrap_or(0),
            "distributedInfo" => {
                // A rank or world size that does not fit in 32 bits is not recorded, never
                // truncated into another rank.
                explicit_rank = v
                    .get("rank")
                    .and_then(Value::as_u64)
                    .and_then(|r| u32::try_from(r).ok());
                info.world_size = v
                    .get("world_size")
                    .and_then(Value::as_u64)
                    .and_then(|r| u32::try_from(r).ok());
            }
            "cuda_runtime_version" => info.cuda_runtime_version = v.as_u64().map(|x| x as u32),
            "cuda_driver_version" => info.cuda_driver_version = v.as_u64().map(|x| x as u32),
            "deviceProperties" => {
                if let Some(list) = v.as_array() {
                    for d in list {
                        let u = |k: &str| d.get(k).and_then(Value::as_u64);
                        info.devices.push(DeviceProps {
                            id: u("id").unwrap_or(0) as u32,
                            name: d
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string(),
                            total_global_mem: u("totalGlobalMem").unwrap_or(0),
                            compute_major: u("computeMajor").unwrap_or(0) as u32,
                            compute_minor: u("computeMinor").unwrap_or(0) as u32,
                            num_sms: u("numSms").unwrap_or(0) as u32,
                            l2_cache_bytes: u("l2CacheSize"),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(r) = explicit_rank {
        info.rank = r;
    }
    Ok((info, recs, explicit_rank))
}
