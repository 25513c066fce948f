//! Reading an Inductor cache (a directory, or a `.tar`/`.tar.gz` of one) by its size, not by
//! what it claims: the files kc needs (modules, autotuner choices, metadata, Triton IR,
//! PTX), each at most [`MAX_CACHE_FILE`] and at most [`MAX_CACHE_BYTES`] in all, tar
//! extension headers read by kc itself within [`MAX_TAR_EXTENSION`], a second member of
//! one name refused; cubins only noted, then read (once each) when a launch needs them,
//! and handed on only when they are CUDA ELF files.
//!
//! Invariant: nothing here allocates beyond the limits, whatever the archive declares.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The files of a cache kc reads, by their path relative to the cache's root (with the
/// root found as the folder above `triton/`, or the archive's top). Cubins are not read
/// here: only their sizes are noted, and [`CacheFiles::load_cubins`] reads the ones a
/// launch resolved to, so a cache is held about once whatever else it holds.
#[derive(Default)]
pub struct CacheFiles {
    pub files: BTreeMap<String, Vec<u8>>,
    /// Cubins by path, with their size.
    pub cubins: BTreeMap<String, u64>,
    /// The bytes held in `files`.
    held: u64,
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

/// Largest single cache file kc reads (a cubin of a big fused kernel is a few MB; a
/// module's PTX tens of MB at most).
pub const MAX_CACHE_FILE: u64 = 64 << 20;
/// Largest total of the files kc holds from one cache (cubins not included: only those a
/// launch needs are read, each once).
pub const MAX_CACHE_BYTES: u64 = 512 << 20;
/// Largest tar extension header (GNU long name or link, PAX): a path is at most a few KiB.
pub const MAX_TAR_EXTENSION: u64 = 64 << 10;
/// The ELF header's machine number of a CUDA cubin.
const EM_CUDA: u16 = 190;

/// Why a cubin cannot be handed to the driver: it must be an ELF file for EM_CUDA
/// (`cuModuleLoadData` takes no length and trusts what it is given).
pub fn cubin_problem(bytes: &[u8]) -> Option<String> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Some(format!(
            "its cubin is not an ELF file ({} bytes, starting {:02x?})",
            bytes.len(),
            &bytes[..bytes.len().min(4)]
        ));
    }
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    (machine != EM_CUDA)
        .then(|| format!("its cubin is an ELF file for machine {machine}, not CUDA ({EM_CUDA})"))
}

impl CacheFiles {
    /// Reads a cache directory or a `.tar.gz`/`.tgz`/`.tar` of one.
    pub fn read(path: &Path) -> Result<CacheFiles, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
        let mut c = CacheFiles::default();
        if meta.is_dir() {
            c.read_dir(path, path)?;
        } else {
            c.read_tar(open_archive(path)?, None)?;
        }
        if c.files.is_empty() && c.cubins.is_empty() {
            return Err("holds no Inductor cache files (.py, triton/*/*.cubin)".into());
        }
        Ok(c)
    }

    fn keep(&mut self, path: String, bytes: Vec<u8>, at: &str) -> Result<(), String> {
        self.held += bytes.len() as u64;
        if self.held > MAX_CACHE_BYTES {
            return Err(format!(
                "{at}: the cache's files exceed {} MiB in all, more than an Inductor cache holds",
                MAX_CACHE_BYTES >> 20
            ));
        }
        if self.files.insert(path.clone(), bytes).is_some() || self.cubins.contains_key(&path) {
            return Err(format!(
                "{at}: a second member named {path}; a cache names each file once"
            ));
        }
        Ok(())
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
            } else if m.is_file() {
                let rel = p
                    .strip_prefix(root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .to_string();
                if !wanted(&rel) {
                    continue;
                }
                if m.len() > MAX_CACHE_FILE {
                    return Err(format!(
                        "{}: {} bytes, more than the {} MiB a cache file may hold",
                        p.display(),
                        m.len(),
                        MAX_CACHE_FILE >> 20
                    ));
                }
                if rel.ends_with(".cubin") {
                    self.cubins.insert(rel, m.len());
                    continue;
                }
                let bytes = crate::files::read_capped(&p, MAX_CACHE_FILE, "cache file")
                    .map_err(|e| format!("{}: cannot read: {e}", p.display()))?;
                self.keep(rel, bytes, &p.display().to_string())?;
            }
        }
        Ok(())
    }

    /// Reads the wanted members of a tar stream. Member paths are kept as written, with a
    /// leading `./` dropped; lookups match on path suffixes, so any top folder works.
    /// Extension headers (GNU long names, PAX) are read by kc itself, bounded by
    /// [`MAX_TAR_EXTENSION`]; with `cubins` given, only those cubins are read (into it),
    /// otherwise cubins are only noted.
    pub fn read_tar(
        &mut self,
        r: impl Read,
        mut cubins: Option<&mut BTreeMap<String, Vec<u8>>>,
    ) -> Result<(), String> {
        let mut ar = tar::Archive::new(r);
        let entries = ar
            .entries()
            .map_err(|e| format!("not a tar archive: {e}"))?
            .raw(true);
        let mut long_name: Option<String> = None;
        let mut offset: u64 = 0;
        for (i, e) in entries.enumerate() {
            let mut e = e.map_err(|e| format!("tar member {i} (byte {offset}): {e}"))?;
            offset = e.raw_header_position();
            let at = |path: &str| format!("tar member {i} ({path}, header at byte {offset})");
            let size = e
                .header()
                .size()
                .map_err(|err| format!("tar member {i} (byte {offset}): {err}"))?;
            let kind = e.header().entry_type();
            if kind.is_gnu_longname()
                || kind.is_gnu_longlink()
                || kind.is_pax_local_extensions()
                || kind.is_pax_global_extensions()
            {
                if size > MAX_TAR_EXTENSION {
                    return Err(format!(
                        "tar member {i} (byte {offset}): an extension header of {size} bytes, more than the {} KiB a path needs",
                        MAX_TAR_EXTENSION >> 10
                    ));
                }
                let mut b = Vec::with_capacity(size as usize);
                (&mut e)
                    .take(MAX_TAR_EXTENSION)
                    .read_to_end(&mut b)
                    .map_err(|err| format!("tar member {i} (byte {offset}): {err}"))?;
                if kind.is_gnu_longname() {
                    long_name = Some(
                        String::from_utf8_lossy(&b)
                            .trim_end_matches('\0')
                            .to_string(),
                    );
                } else if kind.is_pax_local_extensions() {
                    // "LEN path=VALUE\n" records; only the path matters here.
                    for rec in b.split(|&c| c == b'\n') {
                        let t = String::from_utf8_lossy(rec);
                        if let Some((_, kv)) = t.split_once(' ') {
                            if let Some(v) = kv.strip_prefix("path=") {
                                long_name = Some(v.to_string());
                            }
                        }
                    }
                }
                continue;
            }
            let name = long_name.take();
            if !kind.is_file() {
                continue;
            }
            let path = match name {
                Some(n) => n,
                None => match e.path() {
                    Ok(p) => p.to_string_lossy().to_string(),
                    Err(_) => continue,
                },
            };
            let path = path.trim_start_matches("./").to_string();
            if !wanted(&path) {
                continue;
            }
            if size > MAX_CACHE_FILE {
                return Err(format!(
                    "{}: {size} bytes, more than the {} MiB a cache file may hold",
                    at(&path),
                    MAX_CACHE_FILE >> 20
                ));
            }
            let read = |e: &mut tar::Entry<'_, _>| -> Result<Vec<u8>, String> {
                let mut bytes = Vec::with_capacity(size as usize);
                e.take(MAX_CACHE_FILE)
                    .read_to_end(&mut bytes)
                    .map_err(|err| format!("{}: {err}", at(&path)))?;
                Ok(bytes)
            };
            if path.ends_with(".cubin") {
                match cubins.as_deref_mut() {
                    Some(want) => {
                        if let Some(slot) = want.get_mut(&path) {
                            *slot = read(&mut e)?;
                        }
                    }
                    None => {
                        if self.cubins.insert(path.clone(), size).is_some() {
                            return Err(format!(
                                "{}: a second member named {path}; a cache names each file once",
                                at(&path)
                            ));
                        }
                    }
                }
                continue;
            }
            if cubins.is_none() {
                let bytes = read(&mut e)?;
                let where_ = at(&path);
                self.keep(path, bytes, &where_)?;
            }
        }
        Ok(())
    }

    /// Reads the cubins at `paths` (relative, as listed in `cubins`) from the cache at
    /// `root` (a directory or an archive, read a second time for only these members).
    pub fn load_cubins(root: &Path, paths: &[String]) -> Result<BTreeMap<String, Vec<u8>>, String> {
        let mut want: BTreeMap<String, Vec<u8>> =
            paths.iter().map(|p| (p.clone(), Vec::new())).collect();
        if root.is_dir() {
            for (p, bytes) in want.iter_mut() {
                let f = root.join(p);
                *bytes = crate::files::read_capped(&f, MAX_CACHE_FILE, "cubin")
                    .map_err(|e| format!("{}: cannot read: {e}", f.display()))?;
            }
        } else {
            CacheFiles::default().read_tar(open_archive(root)?, Some(&mut want))?;
        }
        Ok(want)
    }
}

fn open_archive(path: &Path) -> Result<Box<dyn Read>, String> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut r = std::io::BufReader::new(f);
    // gzip by its name or its magic; the magic is peeked, not consumed.
    let head = r.fill_buf().map_err(|e| format!("cannot read: {e}"))?;
    let name = path.to_string_lossy();
    let gz = head.starts_with(&[0x1f, 0x8b]) || name.ends_with(".gz") || name.ends_with(".tgz");
    let mut inner: Box<dyn Read> = if gz {
        Box::new(flate2::read::GzDecoder::new(r))
    } else {
        Box::new(r)
    };
    // The first header block says whether this is a tar archive at all (POSIX and GNU tar
    // write "ustar" at byte 257): a trace or a plan given here gets a plain answer, not a
    // checksum error over its text.
    let mut first = Vec::with_capacity(512);
    inner
        .by_ref()
        .take(512)
        .read_to_end(&mut first)
        .map_err(|e| format!("cannot read: {e}"))?;
    if first.get(257..262) != Some(b"ustar".as_slice()) {
        let text = String::from_utf8_lossy(&first);
        let looks = if text.contains("traceEvents") || text.contains("schemaVersion") {
            " (it looks like a profiler trace: give that as the TRACE)"
        } else if text.trim_start().starts_with('{') {
            " (it looks like JSON)"
        } else {
            ""
        };
        return Err(format!(
            "not a tar archive{} (no tar header at byte 0){looks}; --inductor-cache takes the \
             Inductor cache directory or a .tar.gz of it",
            if gz { " inside the gzip" } else { "" }
        ));
    }
    Ok(Box::new(std::io::Cursor::new(first).chain(inner)))
}
