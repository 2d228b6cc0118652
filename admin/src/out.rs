//! The command line's standard output.
//!
//! `println!` panics when the reader has gone away (`i9-admin jobs failed |
//! head`), which would stop a command halfway through its work. A line
//! written with [`say!`] instead: once the reader is gone, the command
//! finishes what it does and writes nothing more; any other failure to write
//! is said once on standard error (docs/operations.md, "The commands").

use std::{
    fmt,
    io::{ErrorKind, Write},
    sync::atomic::{AtomicBool, Ordering},
};

/// Set once standard output cannot be written any more.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Write one line (see the module's documentation).
pub fn line(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = writeln!(std::io::stdout().lock(), "{args}") {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            eprintln!(
                "warning: standard output cannot be written ({e}); the command goes on without it"
            );
        }
    }
}

/// `println!` that survives a reader that went away: [`line`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use say;
