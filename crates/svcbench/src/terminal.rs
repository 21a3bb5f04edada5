//! Printing on the terminal without panicking. `println!` panics when its reader has gone (`svcbench run … |
//! head`, `svcbench export --json | head -c 100`): a measurement would end half-way, its session left
//! "running". These drop what cannot be written instead, so every command ends as it would have: a run goes
//! on to store its figures and stop what it started, an export or a report simply loses its reader.

/// `write!`/`writeln!` to `stream`, whatever its reader can no longer take dropped.
#[doc(hidden)]
#[macro_export]
macro_rules! write_or_drop {
    ($stream:expr, $how:ident, $($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = $how!($stream, $($arg)*);
    }};
}

/// `println!` to stdout.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::write_or_drop!(std::io::stdout(), writeln, $($arg)*) };
}

/// `print!` to stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_or_drop!(std::io::stdout(), write, $($arg)*) };
}

/// `eprintln!` to stderr.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::write_or_drop!(std::io::stderr(), writeln, $($arg)*) };
}

/// `eprint!` to stderr.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::write_or_drop!(std::io::stderr(), write, $($arg)*) };
}
