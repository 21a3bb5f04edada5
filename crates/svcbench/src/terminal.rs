//! Printing on the terminal without panicking. `println!` panics when its reader has gone (`svcbench run … |
//! head`, `svcbench export --json | head -c 100`): a measurement would end half-way, its session left
//! "running". These drop what cannot be written instead, so every command ends as it would have: a run goes
//! on to store its figures and stop what it started, an export or a report simply loses its reader.

/// `println!` to stdout; a line its reader cannot take is dropped.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` to stdout; what its reader cannot take is dropped.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` to stderr; a line its reader cannot take is dropped.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` to stderr; what its reader cannot take is dropped.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}
