//! Work per kernel and where it sits under the GPU's roofline: FLOPs and bytes moved per
//! invocation where the op and its recorded shapes say (GEMMs from the recovered M, N, K,
//! batch and dtypes; forward convolutions from input, weight, stride, padding and
//! dilation; attention from its query, key and value shapes; elementwise,
//! normalisation, softmax and reduction ops as the bytes of their tensors), the achieved
//! TFLOP/s and GB/s, the arithmetic intensity, and the share of what the roofline allows at
//! that intensity on the traced GPU (peaks from its datasheet, by name).
//!
//! Invariants: a kernel row sums invocations of one kernel name whose work is known; work
//! is attributed to an instance's longest node (a GEMM's split-K reduction carries none);
//! bytes are the minimum traffic (each operand read or written once), so GB/s is a lower
//! bound on what the kernel moved.

use crate::report::svg::esc;
use kc_ir::{DType, Family, KernelGraph, OpArg, UnitParams};
use serde::Serialize;
use std::collections::BTreeMap;

/// The traced GPU's dense peaks (datasheet figures).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Peak {
    /// 16-bit tensor-core (bf16/fp16) TFLOP/s.
    pub tensor16_tflops: f64,
    pub tf32_tflops: f64,
    pub fp32_tflops: f64,
    pub memory_tb_s: f64,
}

/// Datasheet peaks for the GPU `name` (dense, without sparsity), when kc knows it.
pub fn peak_of(name: &str) -> Option<Peak> {
    let n = name.to_ascii_uppercase();
    let p = |tensor16, tf32, fp32, mem| Peak {
        tensor16_tflops: tensor16,
        tf32_tflops: tf32,
        fp32_tflops: fp32,
        memory_tb_s: mem,
    };
    if n.contains("H200") {
        Some(p(989.4, 494.7, 66.9, 4.8))
    } else if n.contains("H100") && (n.contains("PCIE")) {
        Some(p(756.0, 378.0, 51.2, 2.0))
    } else if n.contains("H100") {
        Some(p(989.4, 494.7, 66.9, 3.35))
    } else if n.contains("A100") {
        Some(p(
            312.0,
            156.0,
            19.5,
            if n.contains("40GB") { 1.555 } else { 2.039 },
        ))
    } else if n.contains("MI300X") {
        Some(p(1307.4, 653.7, 163.4, 5.3))
    } else {
        None
    }
}

/// One kernel name's known work.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RooflineRow {
    pub name: String,
    pub family: &'static str,
    pub invocations: u64,
    pub total_us: f64,
    pub flops: f64,
    pub bytes: f64,
    pub tflops: f64,
    pub gb_s: f64,
    /// FLOPs per byte (0 for pure data movement).
    pub intensity: f64,
    /// The compute peak this work is judged against ("tensor16", "tf32", "fp32" or
    /// "memory" for data movement).
    pub against: &'static str,
    /// Achieved / what the roofline allows at this intensity (`None`: GPU unknown). For
    /// data movement, GB/s against the HBM peak: above 1 the data came from L2.
    pub fraction_of_roof: Option<f64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Roofline {
    pub device: String,
    pub peak: Option<Peak>,
    pub rows: Vec<RooflineRow>,
    /// Share of the GPU time whose work is known.
    pub covered_pct: f64,
}

fn tensor_bytes(args: &[OpArg]) -> Vec<f64> {
    args.iter()
        .flat_map(|a| a.tensors())
        .map(|t| t.numel().max(0) as f64 * f64::from(t.dtype.size_bytes()))
        .collect()
}

/// (FLOPs, bytes, peak kind) of one invocation, where known.
fn work(
    g: &KernelGraph,
    params: &UnitParams,
    family: Family,
    kernel: &str,
) -> Option<(f64, f64, &'static str)> {
    match params {
        UnitParams::Gemm(c) => {
            let batch = c.batch.max(1) as f64;
            let (m, n, k) = (c.m as f64, c.n as f64, c.k as f64);
            let sz = |d: DType| f64::from(d.size_bytes().max(1));
            let flops = 2.0 * m * n * k * batch;
            let bytes =
                batch * (m * k * sz(c.a_type) + k * n * sz(c.b_type) + m * n * sz(c.c_type));
            let against = match c.a_type {
                DType::F16 | DType::BF16 => "tensor16",
                DType::F32 if kernel.contains("tf32") || kernel.contains("tensorop_s1688") => {
                    "tf32"
                }
                _ => "fp32",
            };
            Some((flops, bytes, against))
        }
        UnitParams::Op { name, args } => {
            let op = g.str(*name);
            let sizes = tensor_bytes(args);
            if sizes.is_empty() {
                return None;
            }
            if let Some(w) = conv_work(op, args) {
                return Some(w);
            }
            if family == Family::Attention || op.contains("attention") {
                // q [b, h, s_q, d], k [b, h, s_k, d]: QK^T and PV, 2 FLOPs a multiply-add.
                let ts: Vec<_> = args.iter().flat_map(|a| a.tensors()).collect();
                let (q, k) = (ts.first()?, ts.get(1)?);
                if q.dims.len() != 4 || k.dims.len() != 4 {
                    return None;
                }
                let (b, h, sq, d) = (q.dims[0], q.dims[1], q.dims[2], q.dims[3]);
                let sk = k.dims[2];
                let mut flops = 4.0 * (b * h * sq * sk * d) as f64;
                if op.contains("backward") {
                    flops *= 2.5;
                }
                let bytes: f64 = sizes.iter().take(3).sum::<f64>() * 2.0;
                let against = if q.dtype == DType::F32 {
                    "fp32"
                } else {
                    "tensor16"
                };
                return Some((flops, bytes, against));
            }
            match family {
                Family::Elementwise
                | Family::Norm
                | Family::Softmax
                | Family::Reduction
                | Family::Copy => {
                    // Inputs read once, the result written once (as large as the largest input).
                    let largest = sizes.iter().cloned().fold(0.0, f64::max);
                    Some((0.0, sizes.iter().sum::<f64>() + largest, "memory"))
                }
                _ => None,
            }
        }
        UnitParams::Memcpy { bytes, .. } => Some((0.0, 2.0 * *bytes as f64, "memory")),
        UnitParams::Memset { bytes, .. } => Some((0.0, *bytes as f64, "memory")),
        _ => None,
    }
}

/// A scalar list argument ("[1, 1]") as integers.
fn ints(a: Option<&OpArg>) -> Option<Vec<i64>> {
    match a? {
        OpArg::ScalarList { value, .. } => value
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect(),
        _ => None,
    }
}

/// A forward convolution's work: input [N, C, H, W...], weight [K, C/g, R, S...]; the output
/// size from stride, padding and dilation (`aten::convolution`'s and `cudnn_convolution`'s
/// argument order); 2 FLOPs per multiply-add.
fn conv_work(op: &str, args: &[OpArg]) -> Option<(f64, f64, &'static str)> {
    let (stride, padding, dilation) = match op {
        "aten::convolution" | "aten::_convolution" | "aten::conv2d" => (3, 4, 5),
        "aten::cudnn_convolution" => (3, 2, 4),
        _ => return None,
    };
    let (OpArg::Tensor(x), OpArg::Tensor(w)) = (args.first()?, args.get(1)?) else {
        return None;
    };
    let spatial = x.dims.len().checked_sub(2)?;
    if spatial == 0 || w.dims.len() != x.dims.len() {
        return None;
    }
    let (s, p, d) = (
        ints(args.get(stride))?,
        ints(args.get(padding))?,
        ints(args.get(dilation))?,
    );
    let mut out_pixels = 1i64;
    for i in 0..spatial {
        let (inp, k) = (x.dims[2 + i], w.dims[2 + i]);
        let (si, pi, di) = (
            *s.get(i).or(s.first())?,
            *p.get(i).or(p.first())?,
            *d.get(i).or(d.first())?,
        );
        let o = (inp + 2 * pi - di * (k - 1) - 1) / si.max(1) + 1;
        out_pixels *= o.max(0);
    }
    let (n, kout) = (x.dims[0], w.dims[0]);
    let per_output: i64 = w.dims[1..].iter().product();
    let flops = 2.0 * (n * kout * out_pixels) as f64 * per_output as f64;
    let sz = f64::from(x.dtype.size_bytes().max(1));
    let bytes = (x.numel() + w.numel() + n * kout * out_pixels) as f64 * sz;
    let against = match x.dtype {
        DType::F16 | DType::BF16 => "tensor16",
        _ => "fp32",
    };
    Some((flops, bytes, against))
}

/// The roofline table of a lowered graph (empty rows before lowering).
pub fn roofline(g: &KernelGraph) -> Roofline {
    let device = g
        .meta
        .ranks
        .iter()
        .flat_map(|r| r.devices.iter())
        .map(|d| d.name.clone())
        .next()
        .unwrap_or_default();
    let peak = peak_of(&device);
    // name -> (family, invocations, ns, flops, bytes, against)
    let mut acc: BTreeMap<String, (&'static str, u64, i64, f64, f64, &'static str)> =
        BTreeMap::new();
    let mut covered_ns = 0i64;
    for inst in &g.instances {
        let Some(unit) = g.units.get(inst.unit.0 as usize) else {
            continue;
        };
        let Some(&main) = inst.nodes.iter().max_by_key(|&&n| g.graph[n].dur_ns) else {
            continue;
        };
        let kernel = g.str(g.graph[main].kind.name());
        let Some((flops, bytes, against)) = work(g, &unit.params, unit.family, kernel) else {
            continue;
        };
        let ns: i64 = inst.nodes.iter().map(|&n| g.graph[n].dur_ns).sum();
        covered_ns += ns;
        let e = acc.entry(kernel.to_string()).or_insert((
            unit.family.as_str(),
            0,
            0,
            0.0,
            0.0,
            against,
        ));
        e.1 += 1;
        e.2 += ns;
        e.3 += flops;
        e.4 += bytes;
    }
    let total_ns = g.gpu_time_ns().max(1);
    let mut rows: Vec<RooflineRow> = acc
        .into_iter()
        .map(|(name, (family, n, ns, flops, bytes, against))| {
            let s = ns.max(1) as f64 / 1e9;
            let (tflops, gb_s) = (flops / s / 1e12, bytes / s / 1e9);
            let intensity = if bytes > 0.0 { flops / bytes } else { 0.0 };
            let fraction_of_roof = peak.map(|p| {
                let compute = match against {
                    "tensor16" => p.tensor16_tflops,
                    "tf32" => p.tf32_tflops,
                    "fp32" => p.fp32_tflops,
                    _ => 0.0,
                };
                let memory_roof_tflops = intensity * p.memory_tb_s; // TB/s x FLOP/B = TFLOP/s
                if against == "memory" || flops == 0.0 {
                    gb_s / (p.memory_tb_s * 1000.0)
                } else {
                    tflops / compute.min(memory_roof_tflops).max(1e-9)
                }
            });
            RooflineRow {
                name,
                family,
                invocations: n,
                total_us: ns as f64 / 1000.0,
                flops,
                bytes,
                tflops,
                gb_s,
                intensity,
                against,
                fraction_of_roof,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.name.cmp(&b.name))
    });
    Roofline {
        device,
        peak,
        rows,
        covered_pct: 100.0 * covered_ns as f64 / total_ns as f64,
    }
}

/// The roofline chart as SVG: log-log intensity against achieved TFLOP/s, the memory roof
/// and the compute roofs, one point per kernel name (area by its time).
pub fn svg(r: &Roofline) -> String {
    use std::fmt::Write;
    let (w, h, l, b) = (720.0, 480.0, 70.0, 50.0);
    let (x0, x1, y0, y1) = (1e-2f64, 1e4f64, 1e-3f64, 2e3f64);
    let x =
        |v: f64| l + (v.max(x0).log10() - x0.log10()) / (x1.log10() - x0.log10()) * (w - l - 20.0);
    let y = |v: f64| {
        (h - b) - (v.max(y0).log10() - y0.log10()) / (y1.log10() - y0.log10()) * (h - b - 20.0)
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        o,
        r#"<text x="{}" y="14">Roofline: {} (points: kernels with known work, area by time)</text>"#,
        l, r.device
    );
    let _ = writeln!(
        o,
        r#"<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{l}" y1="20" x2="{l}" y2="{}" stroke="black"/>"#,
        h - b,
        w - 20.0,
        h - b,
        h - b
    );
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}">FLOP/byte</text><text x="10" y="30">TFLOP/s</text>"#,
        w / 2.0,
        h - 15.0
    );
    if let Some(p) = r.peak {
        for (label, peak) in [
            ("16-bit", p.tensor16_tflops),
            ("TF32", p.tf32_tflops),
            ("FP32", p.fp32_tflops),
        ] {
            let knee = peak / p.memory_tb_s;
            let _ = writeln!(
                o,
                r#"<polyline fill="none" stroke="gray" points="{},{} {},{} {},{}"/><text x="{}" y="{}" fill="gray">{label} {peak} TFLOP/s</text>"#,
                x(x0),
                y(x0 * p.memory_tb_s),
                x(knee),
                y(peak),
                x(x1),
                y(peak),
                x(x1) - 150.0,
                y(peak) - 3.0
            );
        }
    }
    let total: f64 = r.rows.iter().map(|k| k.total_us).sum::<f64>().max(1e-9);
    for k in r.rows.iter().filter(|k| k.flops > 0.0) {
        let rad = 2.0 + 12.0 * (k.total_us / total).sqrt();
        let _ = writeln!(
            o,
            r#"<circle cx="{:.1}" cy="{:.1}" r="{rad:.1}" fill="steelblue" fill-opacity="0.5"><title>{} ({}): {:.1} TFLOP/s at {:.1} FLOP/B, {:.1} us</title></circle>"#,
            x(k.intensity),
            y(k.tflops),
            esc(&k.name),
            k.family,
            k.tflops,
            k.intensity,
            k.total_us
        );
    }
    o.push_str("</svg>\n");
    o
}
