//! Which channels this bridge exports and imports, for `nerve top` and
//! `nerve ls --remote`: the file the Python readers read
//! (python-tools/src/nerve_tools/bridge/registry.py), /dev/shm/
//! nerve-bridge.PID.json, replaced atomically, removed at exit; files of
//! dead processes are removed by the next bridge that starts.
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;

const DIR: &str = "/dev/shm";
const PREFIX: &str = "nerve-bridge.";

fn path_of(pid: u32) -> PathBuf {
    PathBuf::from(format!("{DIR}/{PREFIX}{pid}.json"))
}

fn alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for the process.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

pub fn write(
    pid: u32,
    ident: &str,
    domain: u64,
    exported: &[&String],
    imported: &BTreeMap<&String, Vec<&String>>,
) -> std::io::Result<()> {
    let doc = json!({"pid": pid, "id": ident, "domain": domain, "exported": exported, "imported": imported});
    let p = path_of(pid);
    let tmp = PathBuf::from(format!("{}.tmp", p.display()));
    std::fs::write(&tmp, doc.to_string())?;
    std::fs::rename(&tmp, &p)
}

pub fn remove(pid: u32) {
    let p = path_of(pid);
    let _ = std::fs::remove_file(format!("{}.tmp", p.display()));
    let _ = std::fs::remove_file(p);
}

/// Remove the registries of processes that are gone (with `clean`).
pub fn read_all(clean: bool) {
    let Ok(dir) = std::fs::read_dir(DIR) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.strip_suffix(".json"))
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if clean && !alive(pid) {
            remove(pid);
        }
    }
}
