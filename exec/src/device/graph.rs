//! Graph capture and timed launches on the device core: a capture on stream 0 (other
//! streams join through event waits), or one a back end owns (libtorch's CUDAGraph, whose
//! RNG and allocator must know a capture is under way), instantiated into a [`Graph`];
//! back-to-back launches timed with CUDA events; the [`Feeder`] that keeps the GPU busy for
//! energy windows.
//!
//! Invariant: a capture begun is always ended, also when what was enqueued failed; a graph
//! frees its executable graph and, through its owner's free function, what the owner kept.

use super::{cu_err, Device, Event};
use crate::ExecError;
use cudarc::driver::sys as cu;
use kc_core::results::BatchTime;
use std::collections::VecDeque;
use std::ffi::c_void;

/// A capture a back end began (its handle) and how to free what it keeps for the graph.
pub struct CaptureOwner {
    pub handle: *mut c_void,
    /// Frees the handle once the executable graph is gone.
    pub free: unsafe fn(*mut c_void),
}

impl Device {
    /// Begins kc's own capture on stream 0.
    pub fn begin_capture(&self) -> Result<(), ExecError> {
        // SAFETY: starts capturing on stream 0; other streams join through event waits.
        unsafe {
            cu_err(
                cu::cuStreamBeginCapture_v2(
                    self.streams[0],
                    cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
                ),
                "cuStreamBeginCapture",
            )
        }
    }

    /// Ends kc's own capture on stream 0; returns the captured graph.
    pub fn end_capture(&self) -> Result<cu::CUgraph, ExecError> {
        let mut g: cu::CUgraph = std::ptr::null_mut();
        // SAFETY: ends the capture begun on stream 0.
        unsafe {
            cu_err(
                cu::cuStreamEndCapture(self.streams[0], &mut g),
                "cuStreamEndCapture",
            )?;
        }
        Ok(g)
    }

    /// Instantiates a captured graph. A graph kc captured itself (no owner) is destroyed
    /// after instantiation; one a back end captured belongs to its owner, which the
    /// returned [`Graph`] frees when it drops.
    ///
    /// # Safety
    /// `g` is a graph captured on this device and not yet instantiated or destroyed.
    pub unsafe fn instantiate(
        &self,
        g: cu::CUgraph,
        owner: Option<CaptureOwner>,
    ) -> Result<Graph, ExecError> {
        // SAFETY: `g` is a captured graph; the executable graph is `Graph`'s.
        unsafe {
            let mut exec: cu::CUgraphExec = std::ptr::null_mut();
            let r = cu::cuGraphInstantiateWithFlags(&mut exec, g, 0);
            let mut nodes = 0usize;
            cu::cuGraphGetNodes(g, std::ptr::null_mut(), &mut nodes);
            let node_kinds = node_kinds(g, nodes);
            if owner.is_none() {
                cu::cuGraphDestroy(g);
            }
            let graph = Graph {
                exec,
                nodes,
                node_kinds,
                owner,
            };
            cu_err(r, "cuGraphInstantiate")?;
            Ok(graph)
        }
    }

    /// Launches `g` twice and waits: the first launches upload the graph and bring in what
    /// it reads, so the launches timed after them are steady.
    pub fn warm(&self, g: &Graph) -> Result<(), ExecError> {
        for _ in 0..2 {
            self.launch(g)?;
        }
        self.synchronize()
    }

    pub fn launch(&self, g: &Graph) -> Result<(), ExecError> {
        // SAFETY: launches an instantiated graph on stream 0.
        unsafe { cu_err(cu::cuGraphLaunch(g.exec, self.streams[0]), "cuGraphLaunch") }
    }

    /// Launches `g` once inside a profiler range (`cuProfilerStart`/`cuProfilerStop`), after
    /// the GPU went idle, so that Nsight Compute or Nsight Systems started with
    /// `--profile-from-start off` record exactly one replay and none of the setup.
    pub fn launch_in_profiler_range(&self, g: &Graph) -> Result<(), ExecError> {
        self.synchronize()?;
        // SAFETY: the profiler calls take no arguments; the launch is as in `launch`.
        unsafe { cu_err(cu::cuProfilerStart(), "cuProfilerStart")? };
        let launched = self.launch(g).and_then(|_| self.synchronize());
        // The range is closed also when the launch failed.
        // SAFETY: as above.
        unsafe { cu_err(cu::cuProfilerStop(), "cuProfilerStop")? };
        launched
    }

    /// Launches `g` `n` times back to back with a timing event between launches;
    /// returns each launch's time in microseconds.
    pub fn time_launches(&mut self, g: &Graph, n: usize) -> Result<Vec<f64>, ExecError> {
        let timed = self.enqueue_timed(g, n)?;
        self.synchronize()?;
        timed.read(self)
    }

    /// Enqueues `n` back-to-back launches of `g` with a timing event between launches,
    /// without waiting: what follows on the stream (an energy window's launches) runs
    /// behind them. [`TimedLaunches::read`] gives the times once the stream has passed.
    pub fn enqueue_timed(&mut self, g: &Graph, n: usize) -> Result<TimedLaunches, ExecError> {
        let mut timed = self.begin_timed(n)?;
        self.continue_timed(g, &mut timed)?;
        Ok(timed)
    }

    /// [`Device::enqueue_timed`]'s events for `n` launches, nothing enqueued:
    /// [`Device::continue_timed`] enqueues the launches, the first event just before the
    /// first, so that no time between the two calls falls in a launch's time.
    pub fn begin_timed(&mut self, n: usize) -> Result<TimedLaunches, ExecError> {
        let events: Vec<Event> = (0..=n)
            .map(|_| self.event(true))
            .collect::<Result<_, _>>()?;
        Ok(TimedLaunches {
            events,
            enqueued: None,
        })
    }

    /// Enqueues `timed`'s launches of `g` not yet enqueued, back to back, each followed by
    /// its event (the first preceded by the first event). The host waits here where the
    /// device's queue is full.
    pub fn continue_timed(
        &mut self,
        g: &Graph,
        timed: &mut TimedLaunches,
    ) -> Result<(), ExecError> {
        let mut enqueued = match timed.enqueued {
            Some(n) => n,
            None => {
                self.record(timed.events[0], 0)?;
                timed.enqueued = Some(0);
                0
            }
        };
        while enqueued + 1 < timed.events.len() {
            self.launch(g)?;
            self.record(timed.events[enqueued + 1], 0)?;
            enqueued += 1;
            timed.enqueued = Some(enqueued);
        }
        Ok(())
    }

    /// Launches `g` `n` times, each after the GPU went idle (synchronized), timing each
    /// launch with events around it; microseconds.
    pub fn time_single_launches(&mut self, g: &Graph, n: usize) -> Result<Vec<f64>, ExecError> {
        let (a, b) = (self.event(true)?, self.event(true)?);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            self.synchronize()?;
            self.record(a, 0)?;
            self.launch(g)?;
            self.record(b, 0)?;
            self.synchronize()?;
            let mut ms = 0f32;
            // SAFETY: both events completed (synchronised above) and were timing events.
            unsafe {
                cu_err(
                    cu::cuEventElapsedTime_v2(&mut ms, a.0, b.0),
                    "cuEventElapsedTime",
                )?
            };
            out.push(f64::from(ms) * 1000.0);
        }
        self.release_events(vec![a, b])?;
        Ok(out)
    }

    pub fn release_events(&mut self, evs: Vec<Event>) -> Result<(), ExecError> {
        for e in evs {
            self.events.retain(|x| *x != e);
            // SAFETY: the event is complete and no longer referenced.
            unsafe { cu_err(cu::cuEventDestroy_v2(e.0), "cuEventDestroy")? };
        }
        Ok(())
    }
}

/// An instantiated CUDA graph.
/// The nodes of `g` (`n` of them) counted by kind, most first.
///
/// # Safety
/// `g` is a live graph with `n` nodes.
unsafe fn node_kinds(g: cu::CUgraph, n: usize) -> Vec<(&'static str, usize)> {
    use cu::CUgraphNodeType as T;
    let mut nodes: Vec<cu::CUgraphNode> = vec![std::ptr::null_mut(); n];
    let mut got = n;
    // SAFETY: `nodes` holds room for the `n` nodes the caller counted.
    if n == 0
        || unsafe { cu::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut got) }
            != cu::CUresult::CUDA_SUCCESS
    {
        return Vec::new();
    }
    let mut counts: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for &node in &nodes[..got.min(n)] {
        let mut t = T::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `node` belongs to the live graph `g`.
        if unsafe { cu::cuGraphNodeGetType(node, &mut t) } != cu::CUresult::CUDA_SUCCESS {
            continue;
        }
        let kind = match t {
            T::CU_GRAPH_NODE_TYPE_KERNEL => "kernel",
            T::CU_GRAPH_NODE_TYPE_MEMCPY => "memcpy",
            T::CU_GRAPH_NODE_TYPE_MEMSET => "memset",
            T::CU_GRAPH_NODE_TYPE_HOST => "host",
            T::CU_GRAPH_NODE_TYPE_GRAPH => "child graph",
            T::CU_GRAPH_NODE_TYPE_EMPTY => "empty",
            T::CU_GRAPH_NODE_TYPE_WAIT_EVENT => "event wait",
            T::CU_GRAPH_NODE_TYPE_EVENT_RECORD => "event record",
            T::CU_GRAPH_NODE_TYPE_MEM_ALLOC => "memory allocation",
            T::CU_GRAPH_NODE_TYPE_MEM_FREE => "memory free",
            _ => "other",
        };
        *counts.entry(kind).or_default() += 1;
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v
}

pub struct Graph {
    exec: cu::CUgraphExec,
    pub nodes: usize,
    /// The captured graph's nodes by kind ("kernel", "memcpy", "event record", ...), most
    /// first: what the replay runs besides kernels.
    pub node_kinds: Vec<(&'static str, usize)>,
    /// The back end that captured it (libtorch's CUDAGraph, which owns the captured graph
    /// and the memory pool of the ops that allocated inside it); `None` when kc did.
    owner: Option<CaptureOwner>,
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: destroys the executable graph this value owns (null after a failed
        // instantiation), then the CUDAGraph behind it.
        unsafe {
            if !self.exec.is_null() {
                cu::cuGraphExecDestroy(self.exec);
            }
        }
        // SAFETY: the executable graph made from it is destroyed above; freed once here.
        if let Some(o) = self.owner.take() {
            unsafe { (o.free)(o.handle) };
        }
    }
}

/// Launches enqueued with timing events between them ([`Device::enqueue_timed`]).
pub struct TimedLaunches {
    events: Vec<Event>,
    /// The launches enqueued so far, once the first event is (all once
    /// [`Device::continue_timed`] returned).
    enqueued: Option<usize>,
}

impl TimedLaunches {
    /// Whether every launch is enqueued.
    pub fn all_enqueued(&self) -> bool {
        self.enqueued.is_some_and(|n| n + 1 >= self.events.len())
    }

    /// Each launch's time in microseconds; waits for the last launch to finish.
    pub fn read(self, dev: &mut Device) -> Result<Vec<f64>, ExecError> {
        let last = self.events[self.events.len() - 1];
        // SAFETY: waits on an event this device recorded.
        unsafe { cu_err(cu::cuEventSynchronize(last.0), "cuEventSynchronize")? };
        let mut out = Vec::with_capacity(self.events.len() - 1);
        for w in self.events.windows(2) {
            let mut ms = 0f32;
            // SAFETY: both events completed (the later one was waited on) and were
            // timing events.
            unsafe {
                cu_err(
                    cu::cuEventElapsedTime_v2(&mut ms, w[0].0, w[1].0),
                    "cuEventElapsedTime",
                )?
            };
            out.push(f64::from(ms) * 1000.0);
        }
        dev.release_events(self.events)?;
        Ok(out)
    }
}

/// Keeps the device busy with back-to-back launches of a graph for energy windows: up to
/// `in_flight` batches in flight, each ending in an event, and a count of completed
/// launches. Small batches keep the count fine (it advances a batch at a time) while the
/// batches in flight keep enough work queued that the GPU never waits for the host. Told
/// how long the work need still run ([`Feeder::pump`]), it queues no more than covers
/// that, counting only the batches after the one running, each at the shorter of its
/// expected time and the time batches have been seen to take.
pub struct Feeder<'g> {
    graph: &'g Graph,
    batch: usize,
    /// A batch's expected time on the device, seconds (0: unknown).
    batch_s: f64,
    /// When the first batch was seen retired and the launches completed then, and when the
    /// last was: the batches between give the time a batch is seen to take.
    retired: Option<(std::time::Instant, u64, std::time::Instant)>,
    max_in_flight: usize,
    in_flight: VecDeque<Event>,
    free: Vec<Event>,
    pub completed: u64,
    /// With timing events: the last retired batch's event, which the next is timed from.
    timed_from: Option<Event>,
    /// With timing events, each batch after the first, timed from the one before it
    /// ([`BatchTime`]); `None` without (the events then carry no timing).
    pub batch_times: Option<Vec<BatchTime>>,
}

impl<'g> Feeder<'g> {
    /// A feeder of `batch` launches a batch, each expected to take `batch_s` seconds on the
    /// device (0 where unknown), `in_flight` batches queued at most; with `timing`, each
    /// batch is timed from the one before it on the GPU.
    pub fn new(
        gpu: &mut Device,
        graph: &'g Graph,
        batch: usize,
        batch_s: f64,
        in_flight: usize,
        timing: bool,
    ) -> Result<Feeder<'g>, ExecError> {
        let max_in_flight = in_flight.max(2);
        let free = (0..=max_in_flight)
            .map(|_| gpu.event(timing))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Feeder {
            graph,
            batch: batch.max(1),
            batch_s: batch_s.max(0.0),
            retired: None,
            max_in_flight,
            in_flight: VecDeque::new(),
            free,
            completed: 0,
            timed_from: None,
            batch_times: timing.then(Vec::new),
        })
    }

    /// Launches enqueued so far (completed or in flight).
    pub fn launched(&self) -> u64 {
        self.completed + (self.in_flight.len() * self.batch) as u64
    }

    /// A batch's time on the device as far as known ([`crate::energy::batch_time_s`]).
    fn batch_time_s(&self) -> f64 {
        let seen = self.retired.map(|(first, from, last)| {
            let batches = (self.completed - from) / self.batch as u64;
            ((last - first).as_secs_f64(), batches)
        });
        crate::energy::batch_time_s(self.batch_s, seen)
    }

    /// The launches not yet run, estimated seconds of the device's time: the batches whose
    /// events have not completed (the running one counted whole).
    pub fn queued_s(&self) -> f64 {
        let pending = self
            .in_flight
            .iter()
            // SAFETY: querying events this feeder recorded.
            .filter(|e| unsafe { cu::cuEventQuery(e.0) } == cu::CUresult::CUDA_ERROR_NOT_READY)
            .count();
        pending as f64 * self.batch_time_s()
    }

    /// Retires finished batches (a timed one stamped `now_unix_ms`, the caller's clock, the
    /// one its windows are stamped by), tops the queue up, and returns launches completed
    /// so far. With `for_s`, the work need run only that many seconds more: the queue is
    /// topped up only while the batches after the one running cover less (a full queue
    /// where a batch's time is not known).
    pub fn pump(
        &mut self,
        gpu: &Device,
        now_unix_ms: i64,
        for_s: Option<f64>,
    ) -> Result<u64, ExecError> {
        while let Some(&e) = self.in_flight.front() {
            // SAFETY: querying an event this feeder recorded.
            let r = unsafe { cu::cuEventQuery(e.0) };
            if r == cu::CUresult::CUDA_SUCCESS {
                self.in_flight.pop_front();
                self.completed += self.batch as u64;
                let now = std::time::Instant::now();
                match self.retired.as_mut() {
                    Some(r) => r.2 = now,
                    None => self.retired = Some((now, self.completed, now)),
                }
                let Some(times) = self.batch_times.as_mut() else {
                    self.free.push(e);
                    continue;
                };
                // The batch ran behind the one before it (the queue is kept full): the
                // time between their events is its launches' back to back.
                if let Some(from) = self.timed_from.replace(e) {
                    let mut ms = 0f32;
                    // SAFETY: both are timing events this feeder recorded, and both
                    // completed (the later was just queried done).
                    unsafe {
                        cu_err(
                            cu::cuEventElapsedTime_v2(&mut ms, from.0, e.0),
                            "cuEventElapsedTime",
                        )?
                    };
                    times.push(BatchTime {
                        retired_unix_ms: now_unix_ms,
                        launch_us: f64::from(ms) * 1000.0 / self.batch as f64,
                    });
                    self.free.push(from);
                }
            } else if r == cu::CUresult::CUDA_ERROR_NOT_READY {
                break;
            } else {
                cu_err(r, "cuEventQuery")?;
            }
        }
        let batch_s = self.batch_time_s();
        while self.in_flight.len() < self.max_in_flight {
            if crate::energy::queue_covers(self.in_flight.len(), batch_s, for_s) {
                break;
            }
            let Some(e) = self.free.pop() else { break };
            for _ in 0..self.batch {
                gpu.launch(self.graph)?;
            }
            gpu.record(e, 0)?;
            self.in_flight.push_back(e);
        }
        Ok(self.completed)
    }
}
