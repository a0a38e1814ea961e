//! The declarations of this crate checked against the C headers.
//!
//! One C program is generated from this crate's Rust side and compiled
//! against `include/nerve/nerve.h` with `-Werror`:
//!   - `_Static_assert`s on the size of every struct, and on the offset and
//!     size of each of its fields (the Rust field list is destructured
//!     without `..`, so a field added on the Rust side must be listed);
//!   - `_Static_assert`s on every constant;
//!   - every `pub fn` of `src/lib.rs`'s extern block, rewritten as a C
//!     prototype: a conflicting signature is a compile error.
//!
//! The program is then run: it prints every code of the header's `NERVE_ERRNO_MAP`, which
//! must equal this crate's `NERVE_E*` constants one for one. Finally every
//! `NERVE_API` function of the bound headers must be declared here.
//!
//! The headers are `../../include` from this crate, or `NERVE_INCLUDE_DIR`;
//! the compiler is `CC` or `cc`.
use nerve_sys::*;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::mem::{offset_of, size_of, size_of_val};
use std::path::PathBuf;
use std::process::Command;

const BOUND_HEADERS: &[&str] = &[
    "chan.h",
    "errors.h",
    "clock.h",
    "size.h",
    "version.h",
    "bridge.h",
];

fn include_dir() -> PathBuf {
    match std::env::var_os("NERVE_INCLUDE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include"),
    }
}

/// `_Static_assert`s for the size of struct `$s` and the offset and size of
/// each field; `$c` is the field's C name.
macro_rules! check_struct {
    ($out:expr, $s:ident { $($f:ident => $c:literal),* $(,)? }) => {{
        // SAFETY: every field of these structs is an integer, an array of
        // integers or a raw pointer, for which all-zero bytes are valid.
        let v: $s = unsafe { std::mem::zeroed() };
        // Exhaustive: a Rust field missing from the list does not compile.
        let $s { $($f: _),* } = v;
        let s = stringify!($s);
        writeln!($out, "_Static_assert(sizeof(struct {s}) == {}, \"sizeof {s}\");",
                 size_of::<$s>()).unwrap();
        $(
            writeln!($out,
                "_Static_assert(offsetof(struct {s}, {c}) == {o}, \"offset {s}.{c}\");\n\
                 _Static_assert(sizeof(((struct {s} *)0)->{c}) == {z}, \"size {s}.{c}\");",
                c = $c, o = offset_of!($s, $f), z = size_of_val(&v.$f)).unwrap();
        )*
    }};
}

fn structs(out: &mut String) {
    check_struct!(out, nerve_chan_opts {
        size => "size", flags => "flags", slots => "slots", data_size => "data_size",
        mode => "mode", reserved0 => "reserved0", type_ => "type", encoding => "encoding",
        schema => "schema", schema_len => "schema_len",
    });
    check_struct!(out, nerve_put_info {
        seq => "seq", time_ns => "time_ns", recovered => "recovered",
        reserved0 => "reserved0", reserved => "reserved",
    });
    check_struct!(out, nerve_get_info {
        seq => "seq", missed => "missed", time_ns => "time_ns", len => "len",
        reserved => "reserved",
    });
    check_struct!(out, nerve_view { data => "data", info => "info" });
    check_struct!(out, nerve_stats {
        slots => "slots", data_size => "data_size", file_size => "file_size",
        head_seq => "head_seq", tail_seq => "tail_seq", newest_time_ns => "newest_time_ns",
        bytes_total => "bytes_total", waiters => "waiters", created_ns => "created_ns",
        layout_version => "layout_version", mode => "mode", uid => "uid", gid => "gid",
        creator_version => "creator_version", lock_owner_tid => "lock_owner_tid",
        lock_flags => "lock_flags", create_flags => "create_flags",
        state_flags => "state_flags", reserved0 => "reserved0", reserved => "reserved",
    });
    check_struct!(out, nerve_dir_event { kind => "kind", reserved => "reserved", name => "name" });
    check_struct!(out, nerve_budget_stats {
        max_channel => "max_channel", max_total => "max_total", used => "used",
        channels => "channels", refused => "refused", reserved => "reserved",
    });
    check_struct!(out, nerve_own_stats {
        committed => "committed", waited => "waited", late => "late",
        reserved => "reserved",
    });
    check_struct!(out, nerve_meta {
        type_ => "type", encoding => "encoding", schema => "schema",
        schema_len => "schema_len", reserved => "reserved",
    });
}

/// Every error constant of this crate, by its name without `NERVE_`.
fn rust_errors() -> Vec<(&'static str, i32)> {
    vec![
        ("EPERM", NERVE_EPERM),
        ("ENOENT", NERVE_ENOENT),
        ("EINTR", NERVE_EINTR),
        ("EBADF", NERVE_EBADF),
        ("EAGAIN", NERVE_EAGAIN),
        ("ENOMEM", NERVE_ENOMEM),
        ("EACCES", NERVE_EACCES),
        ("EBUSY", NERVE_EBUSY),
        ("EEXIST", NERVE_EEXIST),
        ("EINVAL", NERVE_EINVAL),
        ("ENOSPC", NERVE_ENOSPC),
        ("EROFS", NERVE_EROFS),
        ("ENAMETOOLONG", NERVE_ENAMETOOLONG),
        ("ENOSYS", NERVE_ENOSYS),
        ("EMSGSIZE", NERVE_EMSGSIZE),
        ("ETIMEDOUT", NERVE_ETIMEDOUT),
        ("ESTALE", NERVE_ESTALE),
        ("ECANCELED", NERVE_ECANCELED),
        ("EMFILE", NERVE_EMFILE),
        ("ENFILE", NERVE_ENFILE),
        ("EDEADLK", NERVE_EDEADLK),
        ("EXDEV", NERVE_EXDEV),
        ("ECORRUPT", NERVE_ECORRUPT),
        ("EVERSION", NERVE_EVERSION),
        ("ENOTCHAN", NERVE_ENOTCHAN),
        ("ETRUNC", NERVE_ETRUNC),
        ("EMISMATCH", NERVE_EMISMATCH),
        ("EOVERWRITTEN", NERVE_EOVERWRITTEN),
        ("ELAPPED", NERVE_ELAPPED),
        ("EABI", NERVE_EABI),
        ("EDECODE", NERVE_EDECODE),
        ("ESUPERSEDED", NERVE_ESUPERSEDED),
    ]
}

fn constants(out: &mut String) {
    let c: &[(&str, i128)] = &[
        ("NERVE_LAYOUT_VERSION", NERVE_LAYOUT_VERSION as i128),
        ("NERVE_NAME_MAX", NERVE_NAME_MAX as i128),
        ("NERVE_TYPE_MAX", NERVE_TYPE_MAX as i128),
        ("NERVE_ENCODING_MAX", NERVE_ENCODING_MAX as i128),
        ("NERVE_SCHEMA_MAX", NERVE_SCHEMA_MAX as i128),
        ("NERVE_WAIT_MAX", NERVE_WAIT_MAX as i128),
        ("NERVE_O_READ", NERVE_O_READ as i128),
        ("NERVE_O_WRITE", NERVE_O_WRITE as i128),
        ("NERVE_O_LAZY", NERVE_O_LAZY as i128),
        ("NERVE_C_EXIST_OK", NERVE_C_EXIST_OK as i128),
        ("NERVE_C_WAKE_ALWAYS", NERVE_C_WAKE_ALWAYS as i128),
        ("NERVE_GET_NEXT", NERVE_GET_NEXT as i128),
        ("NERVE_GET_NEWEST", NERVE_GET_NEWEST as i128),
        ("NERVE_GET_SEQ", NERVE_GET_SEQ as i128),
        ("NERVE_GET_AT", NERVE_GET_AT as i128),
        ("NERVE_GET_MASK", NERVE_GET_MASK as i128),
        ("NERVE_F_WAIT", NERVE_F_WAIT as i128),
        ("NERVE_F_ABSTIME", NERVE_F_ABSTIME as i128),
        ("NERVE_F_REPEAT", NERVE_F_REPEAT as i128),
        ("NERVE_REPAIR_FORCE", NERVE_REPAIR_FORCE as i128),
        ("NERVE_PATH_MAX", NERVE_PATH_MAX as i128),
        ("NERVE_PATH_BELL", NERVE_PATH_BELL as i128),
        ("NERVE_TOPIC_MAX", NERVE_TOPIC_MAX as i128),
        ("NERVE_GLOB_MAX", NERVE_GLOB_MAX as i128),
        ("NERVE_DIR_SCAN", NERVE_DIR_SCAN as i128),
        ("NERVE_DIR_SCAN_MS", NERVE_DIR_SCAN_MS as i128),
        ("NERVE_DIR_CREATED", NERVE_DIR_CREATED as i128),
        ("NERVE_DIR_REMOVED", NERVE_DIR_REMOVED as i128),
        ("NERVE_BUDGET_UNCOUNTED", NERVE_BUDGET_UNCOUNTED as i128),
        ("NERVE_OWN_N", NERVE_OWN_N as i128),
        ("NERVE_OWN_WAIT_NS", NERVE_OWN_WAIT_NS as i128),
        ("NERVE_LOCK_OWNER_DIED", NERVE_LOCK_OWNER_DIED as i128),
        ("NERVE_LOCK_WAITERS", NERVE_LOCK_WAITERS as i128),
        ("NERVE_OK", NERVE_OK as i128),
        ("NERVE_VERSION_MAJOR", NERVE_VERSION_MAJOR as i128),
        ("NERVE_VERSION_MINOR", NERVE_VERSION_MINOR as i128),
        ("NERVE_VERSION_PATCH", NERVE_VERSION_PATCH as i128),
        ("NERVE_VERSION_NUMBER", NERVE_VERSION_NUMBER as i128),
        ("NERVE_ABI_VERSION", NERVE_ABI_VERSION as i128),
    ];
    for (name, v) in c {
        writeln!(out, "_Static_assert({name} == {v}LL, \"{name}\");").unwrap();
    }
    writeln!(
        out,
        "_Static_assert(NERVE_FOREVER == ({}LL - 1), \"NERVE_FOREVER\");",
        NERVE_FOREVER + 1
    )
    .unwrap();
    for (name, v) in rust_errors() {
        writeln!(
            out,
            "_Static_assert(NERVE_{name} == {v}, \"NERVE_{name}\");"
        )
        .unwrap();
    }
}

/// A Rust FFI type as a C type without declarator.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(rest) = t.strip_prefix("*const ") {
        return format!("{} const *", c_type(rest));
    }
    if let Some(rest) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(rest));
    }
    match t {
        "c_int" => "int".into(),
        "c_uint" => "unsigned".into(),
        "c_char" => "char".into(),
        "c_void" => "void".into(),
        "i64" => "int64_t".into(),
        "u64" => "uint64_t".into(),
        "u32" => "uint32_t".into(),
        "usize" => "size_t".into(),
        "nerve_chan" => "nerve_chan".into(),
        "nerve_dir" => "nerve_dir".into(),
        "nerve_budget" => "nerve_budget".into(),
        "nerve_own" => "nerve_own".into(),
        "nerve_list_fn" => "int (*)(const char *, void *)".into(),
        s if s.starts_with("nerve_") => format!("struct {s}"),
        other => panic!("tests/abi.rs has no C spelling for Rust type `{other}`"),
    }
}

/// The `pub fn` declarations of src/lib.rs's extern block, as
/// (name, C prototype).
fn prototypes() -> Vec<(String, String)> {
    let src = include_str!("../src/lib.rs");
    let start = src.find("extern \"C\" {").expect("extern block") + "extern \"C\" {".len();
    let body = &src[start..];
    let body = &body[..body.rfind('}').unwrap()];
    let mut out = Vec::new();
    for decl in body.split(';') {
        let decl: String = decl.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some(decl) = decl.strip_prefix("pub fn ") else {
            assert!(
                decl.is_empty(),
                "unexpected item in the extern block: {decl}"
            );
            continue;
        };
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let name = decl[..open].trim().to_string();
        let ret = match decl[close + 1..].trim().strip_prefix("->") {
            Some(r) => c_type(r),
            None => "void".into(),
        };
        let params: Vec<String> = decl[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| c_type(p.split_once(':').expect("NAME: TYPE").1))
            .collect();
        let params = if params.is_empty() {
            "void".into()
        } else {
            params.join(", ")
        };
        out.push((name.clone(), format!("extern {ret} {name}({params});")));
    }
    out
}

fn header_functions() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for h in BOUND_HEADERS {
        let text = std::fs::read_to_string(include_dir().join("nerve").join(h)).unwrap();
        for part in text.split("NERVE_API").skip(1) {
            let head = &part[..part.find('(').unwrap()];
            let name = head
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .rfind(|w| !w.is_empty())
                .unwrap();
            names.insert(name.to_string());
        }
    }
    names
}

#[test]
fn declarations_match_headers() {
    let mut c = String::from(
        "/* generated by rust/nerve-sys/tests/abi.rs, do not edit */\n\
         #include <nerve/nerve.h>\n#include <stddef.h>\n#include <stdio.h>\n",
    );
    structs(&mut c);
    constants(&mut c);
    for (_, proto) in prototypes() {
        c.push_str(&proto);
        c.push('\n');
    }
    c.push_str(
        "#define P(name, value, msg) printf(\"%s %d\\n\", #name, value);\n\
         int main(void) { NERVE_ERRNO_MAP(P) return 0; }\n",
    );

    let dir = std::env::temp_dir().join(format!("nerve-sys-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("abi_check.c"), dir.join("abi_check"));
    std::fs::write(&src, &c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-I")
        .arg(include_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        out.status.success(),
        "the Rust declarations disagree with the headers ({}):\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    std::fs::remove_dir_all(&dir).unwrap();

    let from_c: BTreeSet<(String, i32)> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, v) = l.split_once(' ').unwrap();
            (n.to_string(), v.parse().unwrap())
        })
        .collect();
    let from_rust: BTreeSet<(String, i32)> = rust_errors()
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    assert_eq!(
        from_c, from_rust,
        "NERVE_ERRNO_MAP and the NERVE_E* constants differ"
    );

    let declared: BTreeSet<String> = prototypes().into_iter().map(|(n, _)| n).collect();
    let missing: Vec<_> = header_functions().difference(&declared).cloned().collect();
    assert!(
        missing.is_empty(),
        "declared in the headers but not in nerve-sys: {missing:?}"
    );
    let extra: Vec<_> = declared.difference(&header_functions()).cloned().collect();
    assert!(
        extra.is_empty(),
        "declared in nerve-sys but in none of {BOUND_HEADERS:?}: {extra:?}"
    );
}

#[test]
fn the_library_links_and_agrees_on_its_version() {
    let mut text = std::ptr::null();
    // SAFETY: nerve_version stores a static string's address in *text.
    let v = unsafe { nerve_version(&mut text) };
    assert_eq!(v as u32 / 10000, NERVE_VERSION_MAJOR);
    // SAFETY: the library returns a NUL-terminated static string.
    let text = unsafe { std::ffi::CStr::from_ptr(text) }.to_str().unwrap();
    assert_eq!(
        text.split('.').next().unwrap(),
        NERVE_VERSION_MAJOR.to_string()
    );
}
