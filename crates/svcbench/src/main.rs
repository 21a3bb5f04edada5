//! The svcbench command: parses the command line and hands it to the library (lib.rs).
use clap::Parser;

fn main() {
    let cli = svcbench::cli::Cli::parse();
    match svcbench::commands::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line: what is wrong and, where we know it, how to fix it.
            eprintln!("svcbench: error: {}", format!("{e:#}").replace('\n', " "));
            std::process::exit(2);
        }
    }
}
