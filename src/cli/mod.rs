//! Command implementations behind `main.rs`: each takes parsed arguments, runs a stage,
//! prints its summary (table or `--json`) and returns the process exit code. Invariant:
//! errors are printed once, as one line naming the file and position, with exit code 2.
#![allow(clippy::print_stdout)]

pub mod analyze;
pub mod app;
pub mod exec;
pub mod ingest;
pub mod lower;
pub mod plan;
pub mod ranks;
pub mod report;
pub mod run;

/// Exit code for bad input and usage errors.
pub const EXIT_BAD_INPUT: i32 = 2;

/// Makes a closed stdout end the process quietly, as it does for other Unix tools
/// (`kc plan show --json P | head`): Rust ignores SIGPIPE, which turns the broken pipe into a
/// panic in `println!`.
pub fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        const SIGPIPE: i32 = 13;
        const SIG_DFL: usize = 0;
        // SAFETY: restores the default disposition of one signal before any thread starts.
        unsafe {
            signal(SIGPIPE, SIG_DFL);
        }
    }
}

/// Refuses an output path before anything is computed or written: an existing directory
/// where a file is meant, or one of the command's own inputs.
pub fn check_output(out: &std::path::Path, inputs: &[&std::path::Path]) -> Result<(), String> {
    crate::files::check_output(out, inputs)
}

pub fn fail(e: impl std::fmt::Display) -> i32 {
    eprintln!("error: {e}");
    EXIT_BAD_INPUT
}

pub fn print_json<T: serde::Serialize>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot render JSON: {e}"),
    }
}

/// The file name of `input` without `suffix`, for a default output in the working
/// directory: no verb writes into its input's folder unless told to with `-o`.
pub fn stem_here(input: &std::path::Path, suffix: &str) -> String {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kc".into());
    name.strip_suffix(suffix).unwrap_or(&name).to_string()
}
