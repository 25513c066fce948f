//! kc's boundary with the file system: bounded reads of its own formats, whole-file writes
//! through temporaries, and the checks that keep a command from destroying its input.
//!
//! Invariants: a file kc writes appears whole or not at all (written to a hidden temporary
//! beside it, then renamed); a temporary never outlives its process quietly (removed on
//! error, on SIGINT/SIGTERM, and, after a SIGKILL, by the next write to the same place, which
//! recognises it by name and a dead writer's process id); an output that is one of the
//! command's inputs (the same inode) is refused before anything is written; and reading a
//! file of a known kind never reads more than that kind's limit, so `/dev/zero` or a
//! mistaken multi-gigabyte file is refused instead of filling memory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The suffix kc's temporaries carry before the writer's process id:
/// `.NAME.kc-tmp-PID` beside the file being written.
const TEMP_TAG: &str = ".kc-tmp-";

/// Temporaries this process is writing now: removed by the signal handler.
static LIVE_TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs a SIGINT/SIGTERM handler that removes this process's temporaries and exits
/// with the shell's code for the signal (130), so Ctrl-C never leaves half files behind.
pub fn clean_up_on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        remove_live_temps(|_| true);
        eprintln!("kc: interrupted; nothing half-written was left behind");
        std::process::exit(130);
    });
}

/// Removes this process's live temporaries that `which` selects (the signal handler takes
/// them all; a test only its own, as other threads may be writing theirs).
fn remove_live_temps(which: impl Fn(&Path) -> bool) {
    if let Ok(mut live) = LIVE_TEMPS.lock() {
        live.retain(|t| {
            if !which(t) {
                return true;
            }
            let _ = std::fs::remove_file(t);
            let _ = std::fs::remove_dir_all(t);
            false
        });
    }
}

/// A temporary path registered for clean-up; removed when dropped unless kept.
pub struct Temp {
    path: PathBuf,
    kept: bool,
}

impl Temp {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the temporary over `dest`, which must be absent or a regular file: a
    /// device, FIFO, socket, symlink or directory there is refused and left as it is (a
    /// rename would replace it, and `-o /dev/null` run as root would destroy /dev/null).
    pub fn persist(mut self, dest: &Path) -> std::io::Result<()> {
        refuse_non_regular(dest)?;
        std::fs::rename(&self.path, dest)?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Ok(mut live) = LIVE_TEMPS.lock() {
            live.retain(|p| p != &self.path);
        }
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Whether a process with this id is alive (Linux: its `/proc` entry exists).
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if !Path::new("/proc/self").exists() {
        return true; // cannot tell: keep the file
    }
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes temporaries of earlier kc runs that wrote to `path` and died (SIGKILL, power
/// loss) before renaming them into place.
fn remove_stale_temps(path: &Path) {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let prefix = format!(".{name}{TEMP_TAG}");
    let Ok(rd) = std::fs::read_dir(parent_dir(path)) else {
        return;
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let old_prefix = format!(".{name}.kc-old-");
        let Some(pid) = n
            .strip_prefix(&prefix)
            .or_else(|| n.strip_prefix(&old_prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !process_alive(pid) {
            let p = e.path();
            let _ = std::fs::remove_file(&p);
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// A fresh temporary beside `path` for this process (same directory, so the final rename
/// cannot cross file systems), registered for clean-up. Stale ones of dead runs are removed.
pub fn temp_beside(path: &Path) -> Temp {
    remove_stale_temps(path);
    temp_named(path, TEMP_TAG)
}

/// What stands at `path`, when it is something kc must not replace with a file: a
/// directory, a symlink (its link would be replaced, not its target written), a device, a
/// FIFO or a socket. `None` when the path is absent or a regular file. Looked at without
/// following a final symlink.
pub fn non_regular_kind(path: &Path) -> Option<&'static str> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory (name a file)");
    }
    if t.is_symlink() {
        return Some("a symbolic link (name the file itself)");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() || t.is_block_device() {
            return Some("a device, not a regular file");
        }
        if t.is_fifo() {
            return Some("a FIFO, not a regular file");
        }
        if t.is_socket() {
            return Some("a socket, not a regular file");
        }
    }
    Some("not a regular file")
}

fn refuse_non_regular(path: &Path) -> std::io::Result<()> {
    match non_regular_kind(path) {
        None => Ok(()),
        Some(kind) => Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("refusing to replace it: it is {kind}"),
        )),
    }
}

/// Refuses an output path that is there and is not a regular file: a directory, a
/// symlink, a device, a FIFO or a socket is left as it is.
pub fn check_output_file(path: &Path) -> Result<(), String> {
    if let Some(kind) = non_regular_kind(path) {
        return Err(format!(
            "{}: cannot write: refusing to replace it: it is {kind}",
            path.display()
        ));
    }
    Ok(())
}

/// Refuses an output before anything is computed or written: one that is there and is not
/// a regular file ([`check_output_file`]), or one of the command's own inputs
/// ([`refuse_overwriting_input`]). The one check every writer of kc makes.
pub fn check_output(out: &Path, inputs: &[&Path]) -> Result<(), String> {
    check_output_file(out)?;
    refuse_overwriting_input(out, inputs)
}

/// Writes atomically: to a temporary beside `path`, then renamed over it, so a failed or
/// interrupted write never leaves a half file or destroys an older good one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    refuse_non_regular(path)?;
    let tmp = temp_beside(path);
    std::fs::write(tmp.path(), bytes)?;
    tmp.persist(path)
}

/// Writes several files all or none: each is written to its own temporary first (named per
/// process, so concurrent runs never share one); only when every one is written are the old
/// files moved aside and the new ones renamed into place, and if any rename fails the old
/// files are put back. Returns the path that failed and why.
pub fn write_all(files: &[(PathBuf, Vec<u8>)]) -> Result<(), (PathBuf, std::io::Error)> {
    for (path, _) in files {
        refuse_non_regular(path).map_err(|e| (path.clone(), e))?;
    }
    let mut temps = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let t = temp_beside(path);
        std::fs::write(t.path(), bytes).map_err(|e| (path.clone(), e))?;
        temps.push(t);
    }
    // Old files move aside first, so a failure part-way can be undone.
    let mut moved: Vec<(PathBuf, Temp)> = Vec::new();
    let undo = |moved: &mut Vec<(PathBuf, Temp)>| {
        for (dest, old) in moved.drain(..) {
            let _ = old.persist(&dest);
        }
    };
    for (path, _) in files {
        if path.exists() {
            let old = temp_named(path, ".kc-old-");
            if let Err(e) = std::fs::rename(path, old.path()) {
                undo(&mut moved);
                return Err((path.clone(), e));
            }
            moved.push((path.clone(), old));
        }
    }
    let mut placed: Vec<&Path> = Vec::new();
    for ((path, _), t) in files.iter().zip(temps) {
        if let Err(e) = t.persist(path) {
            for p in placed {
                let _ = std::fs::remove_file(p);
            }
            undo(&mut moved);
            return Err((path.clone(), e));
        }
        placed.push(path);
    }
    // The old files are dropped (removed) with `moved`.
    Ok(())
}

fn temp_named(path: &Path, tag: &str) -> Temp {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent_dir(path).join(format!(".{name}{tag}{}", std::process::id()));
    if let Ok(mut live) = LIVE_TEMPS.lock() {
        live.push(tmp.clone());
    }
    Temp {
        path: tmp,
        kept: false,
    }
}

#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// Whether two paths name the same existing file (by device and inode).
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((identity(a), identity(b)), (Some(x), Some(y)) if x == y)
}

/// Refuses to write `output` when it is one of `inputs` (the same file, by device and
/// inode, so `./t.json`, a hard link or a symlink are caught too): `kc ingest t.json -o
/// t.json` would otherwise replace the trace with the graph.
pub fn refuse_overwriting_input(output: &Path, inputs: &[&Path]) -> Result<(), String> {
    let Some(out) = identity(output) else {
        return Ok(()); // does not exist yet: cannot be an input
    };
    for i in inputs {
        if identity(i).as_ref() == Some(&out) {
            return Err(format!(
                "{}: refusing to write over an input of this command ({}); name another output",
                output.display(),
                i.display()
            ));
        }
    }
    Ok(())
}

/// Reads a whole file of which at most `limit` bytes make sense (results, logs, kc's own
/// formats): a larger file, or an endless one such as `/dev/zero`, is refused after reading
/// `limit + 1` bytes instead of filling memory.
pub fn read_capped(path: &Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    f.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} MiB, too large for a {what}", limit >> 20),
        ));
    }
    Ok(buf)
}

/// Names kc's own binary formats by their magic, for a file given where text was expected.
pub fn binary_kind(bytes: &[u8]) -> Option<&'static str> {
    match bytes.get(..8) {
        Some(b"KCIRGRPH") => Some("a kc graph (.kcir)"),
        Some(m) if m.starts_with(b"KCPLAN") => Some("a kc plan (.kcplan)"),
        _ if bytes.starts_with(&[0x1f, 0x8b]) => Some("a gzip file"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temps_of_dead_writers_are_removed_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("g.kcir");
        // A pid far beyond pid_max is never alive.
        let dead = dir.path().join(format!(".g.kcir{TEMP_TAG}4294967000"));
        let mine = dir
            .path()
            .join(format!(".g.kcir{TEMP_TAG}{}", std::process::id()));
        let other = dir.path().join(".h.kcir.kc-tmp-4294967000");
        for p in [&dead, &mine, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        remove_stale_temps(&out);
        assert!(!dead.exists());
        assert!(mine.exists());
        assert!(other.exists(), "another file's temporaries are left alone");
    }

    /// What the SIGINT/SIGTERM handler runs: every temporary being written is removed.
    #[test]
    fn the_interrupt_clean_up_removes_live_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let t = temp_beside(&dir.path().join("g.kcir"));
        std::fs::write(t.path(), b"half").unwrap();
        assert!(t.path().exists());
        // Only this test's temporaries: the tests of this module run in parallel threads of
        // one process, and removing every live temporary raced with their writes.
        remove_live_temps(|p| p.starts_with(dir.path()));
        assert!(!t.path().exists());
    }

    #[test]
    fn writes_are_whole_and_leave_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.json");
        write_atomic(&out, b"one").unwrap();
        write_atomic(&out, b"two").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        // Into a directory: refused, nothing left behind.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(write_atomic(&sub, b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn write_all_is_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.md"), dir.path().join("b.svg"));
        write_all(&[(a.clone(), b"a1".to_vec()), (b.clone(), b"b1".to_vec())]).unwrap();
        // b is now a directory: nothing changes, no temporaries stay.
        std::fs::remove_file(&b).unwrap();
        std::fs::create_dir(&b).unwrap();
        assert!(write_all(&[(a.clone(), b"a2".to_vec()), (b.clone(), b"b2".to_vec())]).is_err());
        assert_eq!(std::fs::read(&a).unwrap(), b"a1");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        std::fs::remove_dir(&b).unwrap();
        write_all(&[(a.clone(), b"a3".to_vec()), (b.clone(), b"b3".to_vec())]).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"b3");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A FIFO, a symlink or a device at an output path is refused and left as it is; the
    /// rename of a whole-file write would otherwise replace it (as root, `-o /dev/null`
    /// destroyed /dev/null).
    #[cfg(unix)]
    #[test]
    fn outputs_that_are_not_regular_files_are_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for p in [&fifo, &link] {
            assert!(check_output_file(p).is_err());
            assert!(write_atomic(p, b"x").is_err());
            assert!(write_all(&[(p.to_path_buf(), b"x".to_vec())]).is_err());
        }
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        // /dev/null itself is only looked at, never written.
        assert!(check_output_file(Path::new("/dev/null")).is_err());
        // No temporaries were left.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn an_input_is_never_an_output() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("t.json");
        std::fs::write(&a, b"{}").unwrap();
        let dotted = dir.path().join(".").join("t.json");
        assert!(refuse_overwriting_input(&dotted, &[&a]).is_err());
        assert!(refuse_overwriting_input(&dir.path().join("new"), &[&a]).is_ok());
    }

    #[test]
    fn reads_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("big");
        std::fs::write(&a, vec![b'x'; 2048]).unwrap();
        assert!(read_capped(&a, 1024, "test").is_err());
        assert_eq!(read_capped(&a, 4096, "test").unwrap().len(), 2048);
        #[cfg(target_os = "linux")]
        assert!(read_capped(Path::new("/dev/zero"), 1 << 20, "test").is_err());
    }
}
