//! The `load` command on its own (the same as `svcbench load`), for working on the generator
//! without building the harness: `cargo run --release -p loadgen --example load -- URL -c 64`.

use clap::Parser;

#[derive(Parser)]
#[command(name = "load", about = "HTTP/1.1 load generator (closed and open models)")]
struct Cli {
    #[command(flatten)]
    args: loadgen::cli::LoadArgs,
}

fn main() {
    let cli = Cli::parse();
    match loadgen::cli::run_cli(&cli.args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}
