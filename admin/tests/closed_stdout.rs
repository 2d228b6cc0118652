//! A command whose reader goes away (`i9-admin openapi | head -1`) ends as
//! its work ends, without a panic (docs/operations.md, "The commands").

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::process::{Command, Stdio};

#[test]
fn a_closed_standard_output_is_not_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_i9-admin"))
        .arg("openapi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}; stderr: {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(
        stderr.is_empty(),
        "a closed pipe is not worth a word: {stderr}"
    );
}
