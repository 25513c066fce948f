//! `kc ingest TRACE --inductor-cache DIR`: finds the binary of every Triton kernel a
//! torch.compile'd trace launched in the Inductor cache it was compiled into
//! (`TORCHINDUCTOR_CACHE_DIR`, by default `/tmp/torchinductor_$USER`; a directory or a
//! `.tar.gz` of one), with what the launch needs: the cubin, its entry's parameters in
//! order and which recorded argument each one takes, shared memory and the scratch buffers
//! newer Triton appends.
//!
//! How a launch finds its binary: the trace's op records the kernel's name and the
//! generated module it came from (`kernel_file`, a content-hashed `xx/cxxx.py`). Each
//! compiled config in `triton/<device>/<HASH>/` holds the entry's metadata (`NAME.json`),
//! the cubin, its Triton IR (whose first `loc` names the module) and its PTX (whose entry
//! lists every parameter, scratch included). A module autotuned over several configs has
//! several binaries of one name: the autotuner's `*.best_config` (its `triton_cache_hash`
//! is the binary's directory) picks one, else the launch's recorded `num_warps` and
//! `num_stages` must leave exactly one.
//!
//! Parameters: the module's `def NAME(...)` lists every argument; the profiler records
//! the non-`constexpr` ones, in order; the Triton IR's entry keeps those the compiler did
//! not specialise away, by name; the PTX entry adds the scratch pointers at the end.
//!
//! Invariant: every reader here is total over arbitrary bytes (it returns `None` or a
//! reason, never panics), and a launch resolves to a binary only when its name, module
//! and argument count all agree.

use crate::diag::Diagnostics;
use kc_ir::{CompiledKernel, KernelGraph, KernelParam, OpArg, ParamSource, Resolution};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod archive;
pub use archive::{cubin_problem, CacheFiles, MAX_CACHE_BYTES, MAX_CACHE_FILE, MAX_TAR_EXTENSION};

/// One compiled config found in the cache.
#[derive(Clone, Debug)]
pub struct Binary {
    /// `triton/<device>/<HASH>` relative to the archive's paths.
    pub dir: String,
    pub hash: String,
    pub name: String,
    pub module: Option<String>,
    pub meta: BinaryMeta,
    /// The cubin's path in the cache (read once a launch resolves to it).
    pub cubin: String,
    /// The Triton IR entry's parameters: (name, Triton type).
    pub ir_params: Option<Vec<(String, String)>>,
    pub ptx_params: Option<usize>,
}

/// What kc reads of a compiled kernel's JSON metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BinaryMeta {
    pub name: String,
    pub arch: u32,
    pub num_warps: u32,
    pub num_stages: u32,
    pub shared: u32,
    pub global_scratch_size: u32,
    pub global_scratch_align: u32,
    pub profile_scratch_size: u32,
    pub profile_scratch_align: u32,
}

/// Reads a Triton kernel's metadata JSON: `Ok(None)` when it is not one, an error when a
/// number does not fit the 32 bits the launch takes (never truncated into range).
pub fn read_meta(bytes: &[u8]) -> Result<Option<BinaryMeta>, String> {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(None);
    };
    let Some(o) = v.as_object() else {
        return Ok(None);
    };
    let Some(name) = o.get("name").and_then(Value::as_str).map(str::to_string) else {
        return Ok(None);
    };
    let u = |k: &str, default: Option<u32>| -> Result<Option<u32>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Number(n)) => n
                .as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .map(Some)
                .ok_or_else(|| format!("{name}: metadata {k} = {n} does not fit in 32 bits")),
            Some(other) => Err(format!("{name}: metadata {k} = {other} is not a count")),
        }
    };
    let arch = match o.get("target").and_then(|t| t.get("arch")) {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| format!("{name}: metadata target.arch = {n} is not an architecture"))?,
        // AMD targets name an architecture ("gfx942"): no cubin to launch here.
        _ => 0,
    };
    let Some(num_warps) = u("num_warps", None)? else {
        return Ok(None);
    };
    Ok(Some(BinaryMeta {
        name: name.clone(),
        arch,
        num_warps,
        num_stages: u("num_stages", Some(0))?.unwrap_or(0),
        shared: u("shared", Some(0))?.unwrap_or(0),
        global_scratch_size: u("global_scratch_size", Some(0))?.unwrap_or(0),
        global_scratch_align: u("global_scratch_align", Some(1))?.unwrap_or(1),
        profile_scratch_size: u("profile_scratch_size", Some(0))?.unwrap_or(0),
        profile_scratch_align: u("profile_scratch_align", Some(1))?.unwrap_or(1),
    }))
}

/// The module a Triton IR file was generated from: its first `#loc = loc("PATH":L:C)`,
/// by file name.
pub fn ir_module(ir: &str) -> Option<String> {
    let line = ir
        .lines()
        .take(64)
        .find(|l| l.starts_with("#loc = loc(\""))?;
    let rest = &line["#loc = loc(\"".len()..];
    let path = &rest[..rest.find('"')?];
    Some(path.rsplit('/').next()?.to_string())
}

/// The parameters of the public entry `name` in Triton IR: `tt.func public @NAME(%a: T
/// {attrs} loc(..), ...)`, as (name, Triton type).
pub fn ir_params(ir: &str, name: &str) -> Option<Vec<(String, String)>> {
    let head = format!("tt.func public @{name}(");
    let start = ir.find(&head)? + head.len();
    // The parameter list ends at the `)` that closes the one opened by the head.
    let b = ir.as_bytes();
    let (mut depth, mut end) = (1i32, None);
    let mut in_str = false;
    for (i, &c) in b.iter().enumerate().skip(start) {
        match c {
            b'"' => in_str = !in_str,
            b'(' if !in_str => depth += 1,
            b')' if !in_str => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let list = &ir[start..end?];
    let mut out = Vec::new();
    for part in split_top(list) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let part = part.strip_prefix('%')?;
        let (pname, rest) = part.split_once(':')?;
        let ty = rest.trim_start();
        let ty_end = ty.find([' ', '{']).unwrap_or(ty.len());
        out.push((pname.trim().to_string(), triton_type(&ty[..ty_end])?));
    }
    Some(out)
}

/// Splits at commas outside brackets, braces, angle brackets, parentheses and strings.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut in_str, mut last) = (0i32, false, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '(' | '[' | '{' | '<' if !in_str => depth += 1,
            ')' | ']' | '}' | '>' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                parts.push(&s[last..i]);
                last = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[last..]);
    parts
}

/// Triton IR type text to Triton's signature type: `!tt.ptr<f16>` -> `*fp16`, `i32`,
/// `f32` -> `fp32`.
fn triton_type(t: &str) -> Option<String> {
    let scalar = |s: &str| -> Option<String> {
        Some(match s {
            "i1" | "i8" | "i16" | "i32" | "i64" => s.to_string(),
            "f16" => "fp16".into(),
            "bf16" => "bf16".into(),
            "f32" => "fp32".into(),
            "f64" => "fp64".into(),
            s if s.starts_with("f8") => format!("fp8{}", &s[2..]),
            _ => return None,
        })
    };
    if let Some(inner) = t.strip_prefix("!tt.ptr<") {
        let inner = inner.strip_suffix('>').unwrap_or(inner);
        let elem = inner.split(',').next()?.trim();
        return Some(format!(
            "*{}",
            scalar(elem).unwrap_or_else(|| elem.to_string())
        ));
    }
    scalar(t)
}

/// How many parameters the PTX entry `name` declares.
pub fn ptx_param_count(ptx: &str, name: &str) -> Option<usize> {
    let head = format!(".entry {name}(");
    let start = ptx.find(&head)? + head.len();
    let end = start + ptx[start..].find(')')?;
    Some(
        ptx[start..end]
            .split(',')
            .filter(|p| p.trim_start().starts_with(".param"))
            .count(),
    )
}

/// A module's kernel signature: `def NAME(a, b, XBLOCK : tl.constexpr):` as (name,
/// constexpr) pairs.
pub fn module_signature(py: &str, name: &str) -> Option<Vec<(String, bool)>> {
    let head = format!("def {name}(");
    let start = py.find(&head)? + head.len();
    let end = start + py[start..].find("):")?;
    Some(
        py[start..end]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (n, ty) = p.split_once(':').unwrap_or((p, ""));
                (n.trim().to_string(), ty.contains("constexpr"))
            })
            .collect(),
    )
}

/// Reads a `.best_config`: the autotuner's choice and the binary directory it compiled.
pub fn best_config_hash(bytes: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    Some(v.get("triton_cache_hash")?.as_str()?.to_string())
}

/// The cache, indexed.
pub struct CacheIndex {
    pub binaries: Vec<Binary>,
    /// Module file name -> text.
    modules: HashMap<String, String>,
    /// Binary directories some `.best_config` names.
    chosen: std::collections::HashSet<String>,
    /// Metadata kc refused (a number out of range), by the file it came from: a launch of
    /// such a kernel is told why.
    refused: Vec<String>,
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

impl CacheIndex {
    pub fn build(c: &CacheFiles) -> CacheIndex {
        let mut modules = HashMap::new();
        let mut chosen = std::collections::HashSet::new();
        // Binary directories: every `.../triton/<dev>/<HASH>/` holding a cubin.
        let mut dirs: BTreeMap<String, Vec<(&str, &[u8])>> = BTreeMap::new();
        let mut dir_cubins: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        let in_triton = |dir: &str| dir.contains("triton/") || dir.starts_with("triton");
        for path in c.cubins.keys() {
            if let Some((dir, _)) = path.rsplit_once('/') {
                if in_triton(dir) {
                    dir_cubins.entry(dir.to_string()).or_default().push(path);
                }
            }
        }
        for (path, bytes) in &c.files {
            let fname = file_name(path);
            if fname.ends_with(".py") {
                if let Ok(t) = std::str::from_utf8(bytes) {
                    modules.insert(fname.to_string(), t.to_string());
                }
                continue;
            }
            if fname.ends_with(".best_config") {
                if let Some(h) = best_config_hash(bytes) {
                    chosen.insert(h);
                }
                continue;
            }
            if let Some((dir, _)) = path.rsplit_once('/') {
                if in_triton(dir) {
                    dirs.entry(dir.to_string())
                        .or_default()
                        .push((fname, bytes));
                }
            }
        }
        let mut binaries = Vec::new();
        let mut refused = Vec::new();
        for (dir, files) in dirs {
            let cubins = dir_cubins.get(&dir).cloned().unwrap_or_default();
            // A directory may hold several kernels' files only in odd caches; take each
            // metadata JSON that names a cubin beside it.
            for (f, bytes) in &files {
                if !f.ends_with(".json") {
                    continue;
                }
                let meta = match read_meta(bytes) {
                    Ok(Some(m)) => m,
                    Ok(None) => continue,
                    Err(why) => {
                        refused.push(why);
                        continue;
                    }
                };
                let stem = &f[..f.len() - ".json".len()];
                let find = |ext: &str| {
                    files
                        .iter()
                        .find(|(g, _)| {
                            g.len() == stem.len() + ext.len()
                                && g.starts_with(stem)
                                && g.ends_with(ext)
                        })
                        .map(|(_, b)| *b)
                };
                let want = format!("{stem}.cubin");
                let Some(cubin) = cubins.iter().find(|p| file_name(p) == want) else {
                    continue;
                };
                let ir = find(".ttir")
                    .or_else(|| find(".source"))
                    .and_then(|b| std::str::from_utf8(b).ok());
                let ptx = find(".ptx").and_then(|b| std::str::from_utf8(b).ok());
                binaries.push(Binary {
                    hash: file_name(&dir).to_string(),
                    dir: dir.clone(),
                    module: ir.and_then(ir_module),
                    ir_params: ir.and_then(|t| ir_params(t, &meta.name)),
                    ptx_params: ptx.and_then(|t| ptx_param_count(t, &meta.name)),
                    name: meta.name.clone(),
                    cubin: cubin.to_string(),
                    meta,
                });
            }
        }
        CacheIndex {
            binaries,
            modules,
            chosen,
            refused,
        }
    }

    /// The binary a launch ran and its parameters, or why there is none.
    pub fn resolve(
        &self,
        kernel: &str,
        kernel_file: &str,
        num_warps: Option<u32>,
        num_stages: Option<u32>,
        recorded: &[OpArg],
    ) -> Result<CompiledKernel, String> {
        let module = file_name(kernel_file);
        let mut cands: Vec<&Binary> = self
            .binaries
            .iter()
            .filter(|b| b.name == kernel && b.module.as_deref().is_none_or(|m| m == module))
            .collect();
        if cands.is_empty() {
            if let Some(why) = self
                .refused
                .iter()
                .find(|w| w.starts_with(&format!("{kernel}:")))
            {
                return Err(format!("the Inductor cache's metadata is refused: {why}"));
            }
            return Err(format!(
                "the Inductor cache holds no compiled {kernel} (from {module}): give the cache this trace was compiled into"
            ));
        }
        if cands.len() > 1 {
            let picked: Vec<&Binary> = cands
                .iter()
                .copied()
                .filter(|b| self.chosen.contains(&b.hash))
                .collect();
            if !picked.is_empty() {
                cands = picked;
            }
        }
        if cands.len() > 1 {
            cands.retain(|b| {
                num_warps.is_none_or(|w| w == b.meta.num_warps)
                    && num_stages.is_none_or(|s| s == b.meta.num_stages)
            });
        }
        let b = match cands.as_slice() {
            [b] => *b,
            [] => {
                return Err(format!(
                    "none of the compiled configs of {kernel} has the traced num_warps {num_warps:?} and num_stages {num_stages:?}"
                ))
            }
            more => {
                return Err(format!(
                    "{} compiled configs of {kernel} fit the trace and no autotuner record picks one",
                    more.len()
                ))
            }
        };
        let signature = self
            .modules
            .get(module)
            .and_then(|py| module_signature(py, kernel));
        let params = parameters(b, signature.as_deref(), recorded.len())?;
        Ok(CompiledKernel {
            name: b.name.clone(),
            // Filled by `resolve_all` once every launch resolved: only the cubins used are
            // read, each once.
            cubin: Vec::new(),
            arch: b.meta.arch,
            num_warps: b.meta.num_warps,
            num_stages: b.meta.num_stages,
            shared_bytes: b.meta.shared,
            params,
            global_scratch_bytes: b.meta.global_scratch_size,
            global_scratch_align: b.meta.global_scratch_align,
            profile_scratch_bytes: b.meta.profile_scratch_size,
            profile_scratch_align: b.meta.profile_scratch_align,
            origin: b.cubin.clone(),
        })
    }
}

/// The entry's parameters in order and what each takes (see the module docs).
fn parameters(
    b: &Binary,
    signature: Option<&[(String, bool)]>,
    n_recorded: usize,
) -> Result<Vec<KernelParam>, String> {
    let runtime: Option<Vec<&str>> =
        signature.map(|s| s.iter().filter(|p| !p.1).map(|p| p.0.as_str()).collect());
    if let Some(r) = &runtime {
        if r.len() != n_recorded {
            return Err(format!(
                "the trace recorded {n_recorded} arguments, {} takes {}",
                b.name,
                r.len()
            ));
        }
    }
    let mut params = Vec::new();
    match (&b.ir_params, &runtime) {
        (Some(ir), Some(names)) => {
            for (name, ty) in ir {
                let pos = names.iter().position(|n| n == name).ok_or_else(|| {
                    format!(
                        "{}: parameter {name} is not in its module's signature",
                        b.name
                    )
                })?;
                params.push(KernelParam {
                    name: name.clone(),
                    ty: ty.clone(),
                    source: ParamSource::Arg(pos as u32),
                });
            }
        }
        // Without the module, the IR's parameters are the recorded ones, in order, when
        // their count says nothing was specialised away.
        (Some(ir), None) if ir.len() == n_recorded => {
            for (pos, (name, ty)) in ir.iter().enumerate() {
                params.push(KernelParam {
                    name: name.clone(),
                    ty: ty.clone(),
                    source: ParamSource::Arg(pos as u32),
                });
            }
        }
        _ => {
            return Err(format!(
                "{}: the cache lacks its Triton IR (or module), so its parameters are unknown",
                b.name
            ))
        }
    }
    let declared = b.ptx_params.unwrap_or(params.len());
    if declared < params.len() {
        return Err(format!(
            "{}: its PTX entry declares {declared} parameters, fewer than its {} arguments",
            b.name,
            params.len()
        ));
    }
    for k in 0..declared - params.len() {
        params.push(KernelParam {
            name: if k == 0 {
                "global_scratch"
            } else {
                "profile_scratch"
            }
            .to_string(),
            ty: "*i8".into(),
            source: ParamSource::Scratch,
        });
    }
    Ok(params)
}

/// The cache to read: the flag's, else `TORCHINDUCTOR_CACHE_DIR`, else
/// `/tmp/torchinductor_$USER`, when that exists (`None`: no cache). A default cache is
/// used only when it is trusted ([`untrusted_why`]); otherwise it comes back as the error,
/// for a diagnostic: the user did not name it, and anyone could have made it in /tmp.
pub fn default_cache() -> Option<Result<PathBuf, (PathBuf, String)>> {
    let env = std::env::var_os("TORCHINDUCTOR_CACHE_DIR").map(PathBuf::from);
    let user = std::env::var("USER")
        .ok()
        .map(|u| PathBuf::from(format!("/tmp/torchinductor_{u}")));
    let p = env.into_iter().chain(user).find(|p| p.is_dir())?;
    Some(match untrusted_why(&p) {
        None => Ok(p),
        Some(why) => Err((p, why)),
    })
}

/// Why a cache folder kc was not told to use is not to be trusted: it (or a folder in it)
/// belongs to another user (root aside), or others may write into it, or it is a link.
pub fn untrusted_why(root: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let mut stack = vec![root.to_path_buf()];
        let mut seen = 0usize;
        while let Some(d) = stack.pop() {
            let m = match std::fs::symlink_metadata(&d) {
                Ok(m) => m,
                Err(e) => return Some(format!("{}: {e}", d.display())),
            };
            if m.file_type().is_symlink() {
                return Some(format!("{} is a symbolic link", d.display()));
            }
            if m.uid() != me && m.uid() != 0 {
                return Some(format!(
                    "{} belongs to uid {}, not to you (uid {me})",
                    d.display(),
                    m.uid()
                ));
            }
            if m.mode() & 0o022 != 0 {
                return Some(format!(
                    "{} can be written by others (mode {:o})",
                    d.display(),
                    m.mode() & 0o7777
                ));
            }
            if m.is_dir() {
                seen += 1;
                if seen > 100_000 {
                    break;
                }
                if let Ok(rd) = std::fs::read_dir(&d) {
                    stack.extend(rd.flatten().map(|e| e.path()));
                }
            }
        }
        None
    }
    #[cfg(not(unix))]
    {
        let _ = root;
        None
    }
}

/// What decides a launch's binary and parameters: kernel, module, traced config, and how
/// many arguments the trace recorded.
type LaunchKey<'a> = (&'a str, &'a str, Option<u32>, Option<u32>, usize);

/// Resolves every compiled launch of `g` against the cache at `path` (what it found is
/// counted from the graph by ingest's summary).
pub fn resolve_all(
    g: &mut KernelGraph,
    path: &Path,
    diags: &mut Diagnostics,
) -> Result<(), String> {
    let files = CacheFiles::read(path)?;
    let index = CacheIndex::build(&files);
    // Launches of one kernel with one config resolve once (a model repeats its kernels
    // every layer and iteration), and one binary is kept once however many configs of
    // launches reach it.
    let mut by_launch: HashMap<LaunchKey<'_>, Resolution> = HashMap::new();
    let mut by_binary: HashMap<(String, String), u32> = HashMap::new();
    let mut kernels: Vec<CompiledKernel> = Vec::new();
    let mut resolved = Vec::with_capacity(g.compiled_launches.len());
    for l in &g.compiled_launches {
        let name = g.str(g.op(l.op).name);
        let args = g.args(l.op);
        let key = (
            name,
            l.kernel_file.as_str(),
            l.num_warps,
            l.num_stages,
            args.len(),
        );
        let r = by_launch
            .entry(key)
            .or_insert_with(|| {
                match index.resolve(name, &l.kernel_file, l.num_warps, l.num_stages, args) {
                    Ok(k) => {
                        let next = kernels.len() as u32;
                        let id = *by_binary
                            .entry((k.origin.clone(), k.name.clone()))
                            .or_insert(next);
                        if id == next {
                            kernels.push(k);
                        }
                        Resolution::Binary(id)
                    }
                    Err(why) => Resolution::Missing(why),
                }
            })
            .clone();
        if let Resolution::Missing(why) = &r {
            diags.add(
                "compiled_kernel_missing",
                format!("{}", l.op),
                format!("{name}: {why}"),
            );
        }
        resolved.push(r);
    }
    drop(by_launch);
    drop(index);
    drop(files);
    // Only now the cubins: those some launch resolved to, read once each, and checked to
    // be CUDA ELF files before anything may hand them to the driver.
    let wanted: Vec<String> = kernels.iter().map(|k| k.origin.clone()).collect();
    let mut loaded = CacheFiles::load_cubins(path, &wanted)?;
    let mut bad: HashMap<u32, String> = HashMap::new();
    for (id, k) in kernels.iter_mut().enumerate() {
        k.cubin = loaded.remove(&k.origin).unwrap_or_default();
        if let Some(why) = cubin_problem(&k.cubin) {
            bad.insert(id as u32, format!("{}: {why} ({})", k.name, k.origin));
            k.cubin = Vec::new();
        }
        // The binary's directory names it (as before): the cubin's path told where to read.
        if let Some((dir, _)) = k.origin.rsplit_once('/') {
            k.origin = dir.to_string();
        }
    }
    g.compiled_kernels = kernels;
    for (l, mut r) in g.compiled_launches.iter_mut().zip(resolved) {
        if let Resolution::Binary(id) = r {
            if let Some(why) = bad.get(&id) {
                diags.add("compiled_kernel_missing", format!("{}", l.op), why.clone());
                r = Resolution::Missing(why.clone());
            }
        }
        l.resolution = r;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
