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
use std::io::Read;
use std::path::{Path, PathBuf};

/// The files of a cache kc reads, by their path relative to the cache's root (with the
/// root found as the folder above `triton/`, or the archive's top).
#[derive(Default)]
pub struct CacheFiles {
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Which cache files kc needs: modules, autotuner choices, and per binary its metadata,
/// cubin, Triton IR and PTX (not the Python launchers or LLVM IR).
fn wanted(name: &str) -> bool {
    [
        ".py",
        ".best_config",
        ".json",
        ".cubin",
        ".ttir",
        ".source",
        ".ptx",
    ]
    .iter()
    .any(|e| name.ends_with(e))
        && !name.ends_with("__grp__.json")
}

/// Largest single cache file read (a cubin of a big fused kernel is a few MB).
const MAX_FILE: u64 = 256 << 20;

impl CacheFiles {
    /// Reads a cache directory or a `.tar.gz`/`.tgz`/`.tar` of one.
    pub fn read(path: &Path) -> Result<CacheFiles, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
        let mut c = CacheFiles::default();
        if meta.is_dir() {
            c.read_dir(path, path)?;
        } else {
            let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
            let name = path.to_string_lossy();
            let reader: Box<dyn Read> = if name.ends_with(".gz") || name.ends_with(".tgz") {
                Box::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)))
            } else {
                Box::new(std::io::BufReader::new(f))
            };
            c.read_tar(reader)?;
        }
        if c.files.is_empty() {
            return Err("holds no Inductor cache files (.py, triton/*/*.cubin)".into());
        }
        Ok(c)
    }

    fn read_dir(&mut self, root: &Path, dir: &Path) -> Result<(), String> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: cannot list: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for p in entries {
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                self.read_dir(root, &p)?;
            } else if m.is_file() && m.len() <= MAX_FILE {
                let rel = p
                    .strip_prefix(root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .to_string();
                if wanted(&rel) {
                    let bytes = std::fs::read(&p)
                        .map_err(|e| format!("{}: cannot read: {e}", p.display()))?;
                    self.files.insert(rel, bytes);
                }
            }
        }
        Ok(())
    }

    /// Reads the wanted members of a tar stream. Member paths are kept as written, with a
    /// leading `./` dropped; lookups match on path suffixes, so any top folder works.
    pub fn read_tar(&mut self, r: impl Read) -> Result<(), String> {
        let mut ar = tar::Archive::new(r);
        let entries = ar
            .entries()
            .map_err(|e| format!("not a tar archive: {e}"))?;
        for (i, e) in entries.enumerate() {
            let mut e = e.map_err(|e| format!("tar member {i}: {e}"))?;
            if !e.header().entry_type().is_file() || e.size() > MAX_FILE {
                continue;
            }
            let path = match e.path() {
                Ok(p) => p.to_string_lossy().trim_start_matches("./").to_string(),
                Err(_) => continue,
            };
            if !wanted(&path) {
                continue;
            }
            let mut bytes = Vec::with_capacity(e.size() as usize);
            e.read_to_end(&mut bytes)
                .map_err(|err| format!("tar member {i} ({path}): {err}"))?;
            self.files.insert(path, bytes);
        }
        Ok(())
    }
}

/// One compiled config found in the cache.
#[derive(Clone, Debug)]
pub struct Binary {
    /// `triton/<device>/<HASH>` relative to the archive's paths.
    pub dir: String,
    pub hash: String,
    pub name: String,
    pub module: Option<String>,
    pub meta: BinaryMeta,
    pub cubin: Vec<u8>,
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

/// Reads a Triton kernel's metadata JSON (`None` when it is not one).
pub fn read_meta(bytes: &[u8]) -> Option<BinaryMeta> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let o = v.as_object()?;
    let u = |k: &str| {
        o.get(k)
            .and_then(Value::as_u64)
            .map(|x| x.min(u64::from(u32::MAX)) as u32)
    };
    let name = o.get("name")?.as_str()?.to_string();
    let arch = match o.get("target").and_then(|t| t.get("arch")) {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
        // AMD targets name an architecture ("gfx942"): no cubin to launch here.
        _ => 0,
    };
    Some(BinaryMeta {
        name,
        arch,
        num_warps: u("num_warps")?,
        num_stages: u("num_stages").unwrap_or(0),
        shared: u("shared").unwrap_or(0),
        global_scratch_size: u("global_scratch_size").unwrap_or(0),
        global_scratch_align: u("global_scratch_align").unwrap_or(1),
        profile_scratch_size: u("profile_scratch_size").unwrap_or(0),
        profile_scratch_align: u("profile_scratch_align").unwrap_or(1),
    })
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
                if dir.contains("triton/") || dir.starts_with("triton") {
                    dirs.entry(dir.to_string())
                        .or_default()
                        .push((fname, bytes));
                }
            }
        }
        let mut binaries = Vec::new();
        for (dir, files) in dirs {
            // A directory may hold several kernels' files only in odd caches; take each
            // metadata JSON that names a cubin beside it.
            for (f, bytes) in &files {
                if !f.ends_with(".json") {
                    continue;
                }
                let Some(meta) = read_meta(bytes) else {
                    continue;
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
                let Some(cubin) = find(".cubin") else {
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
                    cubin: cubin.to_vec(),
                    meta,
                });
            }
        }
        CacheIndex {
            binaries,
            modules,
            chosen,
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
            cubin: b.cubin.clone(),
            arch: b.meta.arch,
            num_warps: b.meta.num_warps,
            num_stages: b.meta.num_stages,
            shared_bytes: b.meta.shared,
            params,
            global_scratch_bytes: b.meta.global_scratch_size,
            global_scratch_align: b.meta.global_scratch_align,
            profile_scratch_bytes: b.meta.profile_scratch_size,
            profile_scratch_align: b.meta.profile_scratch_align,
            origin: b.dir.clone(),
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
/// `/tmp/torchinductor_$USER`, when that exists (`None`: no cache).
pub fn default_cache() -> Option<PathBuf> {
    let env = std::env::var_os("TORCHINDUCTOR_CACHE_DIR").map(PathBuf::from);
    let user = std::env::var("USER")
        .ok()
        .map(|u| PathBuf::from(format!("/tmp/torchinductor_{u}")));
    env.into_iter().chain(user).find(|p| p.is_dir())
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
    g.compiled_kernels = kernels;
    for (l, r) in g.compiled_launches.iter_mut().zip(resolved) {
        l.resolution = r;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"#loc = loc("/tmp/inductor_cache_shared/qr/cqrrf5.py":18:0)
#loc13 = loc("in_ptr0"(#loc))
module {
  tt.func public @triton_poi_k_1(%in_ptr0: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("in_ptr0"(#loc)), %out_ptr0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("out_ptr0"(#loc)), %xnumel: i32 {tt.divisibility = 16 : i32} loc("xnumel"(#loc))) attributes {noinline = false} {
"#;

    #[test]
    fn reads_the_ir_entry_and_its_module() {
        assert_eq!(ir_module(IR).as_deref(), Some("cqrrf5.py"));
        assert_eq!(
            ir_params(IR, "triton_poi_k_1").unwrap(),
            vec![
                ("in_ptr0".to_string(), "*fp16".to_string()),
                ("out_ptr0".to_string(), "*fp32".to_string()),
                ("xnumel".to_string(), "i32".to_string()),
            ]
        );
        assert_eq!(ir_params(IR, "other"), None);
    }

    #[test]
    fn reads_ptx_params_and_the_module_signature() {
        let ptx = ".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0,\n\t.param .u32 k_param_1,\n\t.param .u64 .ptr .global .align 1 k_param_2\n)\n.reqntid 32\n";
        assert_eq!(ptx_param_count(ptx, "k"), Some(3));
        let py =
            "@triton.jit\ndef k(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n    pass\n";
        assert_eq!(
            module_signature(py, "k").unwrap(),
            vec![
                ("in_ptr0".into(), false),
                ("out_ptr0".into(), false),
                ("xnumel".into(), false),
                ("XBLOCK".into(), true)
            ]
        );
    }
}
