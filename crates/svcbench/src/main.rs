//! The svcbench command: parses the command line and hands it to the library (lib.rs).
use clap::Parser;

fn main() {
    let cli = svcbench::cli::Cli::try_parse().unwrap_or_else(|e| {
        use clap::error::ErrorKind;
        // A value a flag refuses (out of its bounds, unparsable) says what is wrong and the fix in the
        // error's first line: print that one line, like every other refusal. Other usage errors keep clap's
        // whole text (which arguments are missing, the usage line).
        if matches!(e.kind(), ErrorKind::ValueValidation | ErrorKind::InvalidValue) {
            let text = e.render().to_string();
            svcbench::errln!("svcbench: {}", text.lines().next().unwrap_or("invalid value"));
            std::process::exit(svcbench::exit::REFUSED);
        }
        e.exit()
    });
    match svcbench::commands::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line: what is wrong and, where we know it, how to fix it.
            svcbench::errln!("svcbench: error: {}", format!("{e:#}").replace('\n', " "));
            std::process::exit(svcbench::exit::of_error(&e));
        }
    }
}
