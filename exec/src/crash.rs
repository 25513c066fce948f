//! What kc was doing when a fatal signal ended it. A library below kc (libtorch, cuDNN,
//! the driver) can fault on a pointer kc handed it; the process then dies without a
//! Rust panic or an error, and the user sees only "Segmentation fault". The executor
//! names its current activity here ([`doing`]: the phase, the unit or step) and a handler
//! for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT writes it to stderr before the signal
//! takes its default course (the exit status stays the signal's).
//!
//! Then the stack's frames, named by the libraries' exported symbols.
//!
//! Invariant: the handler only reads a fixed buffer and calls `write(2)`, `signal(2)`,
//! `raise(3)` and glibc's `backtrace(3)`/`backtrace_symbols_fd(3)` (loaded beforehand),
//! which are async-signal-safe there; [`doing`] writes the buffer with plain atomic
//! stores, so a signal in the middle of an update prints a mix of two activities, never
//! memory outside the buffer.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// Bytes of the activity kept; longer ones are cut.
const CAPACITY: usize = 240;

static ACTIVITY: [AtomicU8; CAPACITY] = [const { AtomicU8::new(0) }; CAPACITY];
static LEN: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

const SIGNALS: [(libc::c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV (invalid memory access)"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGABRT, "SIGABRT (abort)"),
];

/// Says what the executor is doing now ("preparing step 812 (aten::mul) over the memory
/// image"), for the fatal-signal handler. Cheap: a copy into a fixed buffer.
pub fn doing(what: &str) {
    let bytes = what.as_bytes();
    // Cut at a character boundary so the message stays valid UTF-8.
    let mut n = bytes.len().min(CAPACITY);
    while n > 0 && n < bytes.len() && !what.is_char_boundary(n) {
        n -= 1;
    }
    LEN.store(0, Ordering::Release);
    for (slot, b) in ACTIVITY.iter().zip(&bytes[..n]) {
        slot.store(*b, Ordering::Relaxed);
    }
    LEN.store(n, Ordering::Release);
}

/// The activity last named, as the handler would print it.
pub fn current() -> String {
    let n = LEN.load(Ordering::Acquire).min(CAPACITY);
    let bytes: Vec<u8> = ACTIVITY[..n]
        .iter()
        .map(|b| b.load(Ordering::Relaxed))
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Installs the handler once per process.
pub fn install() {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    // The first backtrace(3) loads libgcc's unwinder (it allocates): done here, not in
    // the handler.
    let mut frame = [std::ptr::null_mut::<libc::c_void>(); 1];
    // SAFETY: a buffer of one frame, its length passed.
    unsafe { backtrace(frame.as_mut_ptr(), 1) };
    for (sig, _) in SIGNALS {
        // SAFETY: `on_fatal` is an `extern "C" fn(c_int)` that only performs
        // async-signal-safe calls (see the module's invariant). SA_ONSTACK runs it on the
        // thread's alternate signal stack where there is one (Rust's std sets one up), so a
        // stack overflow still reaches it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal(sig: libc::c_int) {
    let name = SIGNALS
        .iter()
        .find(|(s, _)| *s == sig)
        .map_or("a fatal signal", |(_, n)| n);
    let mut buf = [0u8; CAPACITY + 160];
    let mut at = 0;
    for part in [
        b"\nkc: ended by ".as_slice(),
        name.as_bytes(),
        b" while ".as_slice(),
    ] {
        let n = part.len().min(buf.len() - at);
        buf[at..at + n].copy_from_slice(&part[..n]);
        at += n;
    }
    let len = LEN.load(Ordering::Acquire).min(CAPACITY);
    if len == 0 {
        for &b in b"starting" {
            buf[at] = b;
            at += 1;
        }
    }
    for slot in &ACTIVITY[..len] {
        if at < buf.len() - 1 {
            buf[at] = slot.load(Ordering::Relaxed);
            at += 1;
        }
    }
    buf[at] = b'\n';
    at += 1;
    // SAFETY: write(2), signal(2) and raise(3) are async-signal-safe; `buf` outlives the
    // call. glibc's backtrace(3) is safe here once loaded ([`install`] calls it first) and
    // backtrace_symbols_fd(3) writes to the fd without allocating: the frames name the
    // library that faulted (libcuda, libtorch, cuDNN) by its exported symbols. The default
    // action then ends the process with the signal's own status.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), at);
        let mut frames = [std::ptr::null_mut::<libc::c_void>(); 48];
        let n = backtrace(frames.as_mut_ptr(), frames.len() as libc::c_int);
        if n > 0 {
            let head = b"kc: the stack at the signal (innermost first):\n";
            libc::write(2, head.as_ptr().cast(), head.len());
            backtrace_symbols_fd(frames.as_ptr(), n, 2);
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

extern "C" {
    // glibc's execinfo (Linux): the return addresses on the stack, and their symbols
    // written to a file descriptor.
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
    fn backtrace_symbols_fd(buffer: *const *mut libc::c_void, size: libc::c_int, fd: libc::c_int);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_activity_is_kept_and_cut_at_a_character() {
        doing("preparing step 12 (aten::mul) over the memory image");
        assert_eq!(
            current(),
            "preparing step 12 (aten::mul) over the memory image"
        );
        let long = "é".repeat(CAPACITY);
        doing(&long);
        let c = current();
        assert!(c.len() <= CAPACITY && c.chars().all(|ch| ch == 'é'), "{c}");
        doing("");
        assert_eq!(current(), "");
    }

    /// The handler in a child process (this test binary, run again on the test below):
    /// the activity on stderr, and the process still ends by the signal.
    #[test]
    fn a_fatal_signal_says_what_kc_was_doing() {
        if std::env::var_os("KC_CRASH_CHILD").is_some() {
            install();
            doing("testing the handler");
            // SAFETY: raising a signal in this child process is what the test is for.
            unsafe {
                libc::raise(libc::SIGSEGV);
            }
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash::tests::a_fatal_signal_says_what_kc_was_doing",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env("KC_CRASH_CHILD", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("kc: ended by SIGSEGV (invalid memory access) while testing the handler"),
            "{err}"
        );
        use std::os::unix::process::ExitStatusExt;
        assert!(err.contains("kc: the stack at the signal"), "{err}");
        assert_eq!(out.status.signal(), Some(libc::SIGSEGV));
    }
}
