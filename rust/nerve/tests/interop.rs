//! Two processes: a Rust writer with the C `nerve` command reading, and the
//! C command writing (and creating, with metadata) with a Rust reader
//! blocked on the channel. The command is `NERVE_CLI` or the CMake build's
//! `build/tools/nerve`; without it the test says so and passes nothing.
mod common;
use common::{nerve_cli, watchdog, TestChan};
use nerve::{Access, Channel, Options, Wait, Which};
use std::process::{Command, Stdio};
use std::time::Duration;

fn cli_or_skip() -> Option<std::path::PathBuf> {
    let cli = nerve_cli();
    if cli.is_none() {
        eprintln!("SKIP: no nerve command (set NERVE_CLI or run `make build`)");
    }
    cli
}

/// The "seq" and "text" fields of one `cat --format json` line.
fn seq_text(line: &str) -> (u64, String) {
    let field = |key: &str| {
        let at = line
            .find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("{key} in {line}"));
        line[at + key.len() + 3..].trim_start().to_string()
    };
    let seq = field("seq");
    let seq: u64 = seq[..seq.find(|c: char| !c.is_ascii_digit()).unwrap()]
        .parse()
        .unwrap();
    let text = field("text");
    let text = text[1..text[1..].find('"').unwrap() + 1].to_string();
    (seq, text)
}

#[test]
fn rust_writer_c_reader() {
    let Some(cli) = cli_or_skip() else { return };
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("rw-c", &Options::new().slots(64).data_size(4096));
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    w.put(b"before").unwrap();
    // --all starts at the oldest message: the puts may land before or
    // after the reader opens (then its blocking wait wakes for them).
    let reader = Command::new(&cli)
        .args([
            "cat",
            &t.name,
            "--all",
            "--count",
            "5",
            "--timeout",
            "20",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    for i in 1..4 {
        w.put(format!("msg {i}").as_bytes()).unwrap();
    }
    let mut loan = w.loan(64).unwrap();
    loan[..4].copy_from_slice(b"loan");
    loan.commit(4).unwrap();
    let out = reader.wait_with_output().unwrap();
    assert!(out.status.success(), "nerve cat failed: {:?}", out.status);
    let got: Vec<(u64, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(seq_text)
        .collect();
    let want: Vec<(u64, String)> = ["before", "msg 1", "msg 2", "msg 3", "loan"]
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u64 + 1, s.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn c_writer_rust_reader() {
    let Some(cli) = cli_or_skip() else { return };
    let _w = watchdog(Duration::from_secs(60));
    let name = TestChan::fresh_name("cw-rs");
    let st = Command::new(&cli)
        .args([
            "create",
            &name,
            "--slots",
            "32",
            "--size",
            "8K",
            "--type",
            "demo/Text",
            "--encoding",
            "json",
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let _guard = TestChan { name: name.clone() };
    let mut r = Channel::open(&name, Access::Read).unwrap();
    assert_eq!(r.meta().type_name, "demo/Text");
    assert_eq!(r.meta().encoding, "json");
    assert_eq!(r.stats().unwrap().slots, 32);

    let mut buf = [0u8; 64];
    // One `nerve put` process per message, started while this reader
    // blocks (or just before: either way the wait ends with the message).
    for i in 0..5u64 {
        let mut writer = Command::new(&cli)
            .args(["put", &name, &format!("line {i}")])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let g = r
            .get(Which::Next, &mut buf, Wait::For(Duration::from_secs(20)))
            .unwrap();
        assert_eq!(g.seq, i + 1);
        assert_eq!(&buf[..g.len], format!("line {i}").as_bytes());
        assert_eq!(g.missed, 0);
        assert!(writer.wait().unwrap().success());
    }
    let v = r.view(Which::NewestRepeat, Wait::No).unwrap();
    assert_eq!(v.to_vec().unwrap(), b"line 4");
}
