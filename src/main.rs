//! The `kc` binary: the command line of `kc::cli::app`, with the process-wide settings a
//! command-line tool needs (quiet on a closed pipe, temporaries removed on Ctrl-C).

fn main() {
    kc::cli::quiet_on_closed_pipe();
    kc::files::clean_up_on_interrupt();
    std::process::exit(kc::cli::app::main_with(std::env::args_os()));
}
