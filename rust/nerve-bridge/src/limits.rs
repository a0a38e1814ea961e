//! Bounds on what a remote peer may make this host allocate: the same
//! rules, flags, environment variables and messages as the Python tools'
//! `nerve_tools/_limits.py` (its docstring is the specification):
//! `--max-channel-size SIZE` (`NERVE_MAX_CHANNEL_SIZE`, default 64M) bounds
//! a channel's data ring and its index; `--max-import-total SIZE`
//! (`NERVE_MAX_IMPORT_TOTAL`, default 512M) bounds the files of all
//! channels made from peers' descriptions together. A flag overrides the
//! environment, which overrides the default. The bounds are kept by the C
//! library's bridge kernel (`nerve::bridge::Budget`, nerve_budget;
//! docs/bridge-kernel.md), as in every other engine, so neither the rules
//! and their messages nor the size grammar and the page size are spelled
//! here.

pub const DEFAULT_MAX_CHANNEL: u64 = 64 << 20;
pub const DEFAULT_MAX_TOTAL: u64 = 512 << 20;
pub const ENV_MAX_CHANNEL: &str = "NERVE_MAX_CHANNEL_SIZE";
pub const ENV_MAX_TOTAL: &str = "NERVE_MAX_IMPORT_TOTAL";

/// `"64M"` -> 67108864, by the C library's grammar (`nerve_size_parse`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    nerve::parse_size(text).map_err(|e| format!("bad size '{text}': {}", e.detail()))
}

/// A byte count for people: 67108864 -> "64 MiB".
pub fn fmt_size(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift {
            let v = n as f64 / (1u64 << shift) as f64;
            return if v == v.trunc() {
                format!("{} {unit}", v as u64)
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{n} bytes")
}

/// One bound from its flag, else its environment variable, else default.
pub fn resolve(flag: Option<&str>, env: &str, default: u64, what: &str) -> Result<u64, String> {
    let from_env = std::env::var(env).ok();
    let text = match flag.or(from_env.as_deref()) {
        None | Some("") => return Ok(default),
        Some(t) => t,
    };
    let src = if flag.is_some() {
        what.to_string()
    } else {
        format!("${env}")
    };
    let n = parse_size(text).map_err(|e| format!("{src}: {e}"))?;
    if n == 0 {
        return Err(format!("{src} must be positive"));
    }
    Ok(n)
}

/// The two bounds and what is charged against the total (keys: local
/// channel names), in the C library's budget. Used from the bridge's main
/// thread only.
pub struct ImportBudget {
    b: nerve::bridge::Budget,
}

impl ImportBudget {
    /// Panics only for a bound of 0, which `resolve` never returns.
    pub fn new(max_channel: u64, max_total: u64) -> ImportBudget {
        ImportBudget {
            b: nerve::bridge::Budget::new(max_channel, max_total).expect("positive bounds"),
        }
    }

    pub fn charged(&self) -> u64 {
        self.b.stats().used
    }

    /// Admissions refused (counted ones).
    pub fn refused(&self) -> u64 {
        self.b.stats().refused
    }

    /// Reserve the file of channel `name` (`meta_bytes` of metadata: the
    /// file's cost depends only on the metadata's total length, so a
    /// schema of that many bytes stands in for it) before it is created:
    /// `None` (charged; `release` it once gone or not made), or why not
    /// (counted in `refused` when `count`).
    pub fn admit(
        &mut self,
        name: &str,
        slots: u64,
        data_size: u64,
        meta_bytes: u64,
        count: bool,
    ) -> Option<String> {
        let meta = match usize::try_from(meta_bytes) {
            Ok(n) => vec![b'x'; n],
            Err(_) => return Some("metadata too large".into()),
        };
        let opts = nerve::Options::new()
            .slots(slots)
            .data_size(data_size)
            .schema(&meta);
        self.b.admit(name, &opts, count).err().map(|e| e.detail())
    }

    pub fn release(&mut self, name: &str) {
        self.b.release(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_bounds_as_the_python_tools() {
        // The table the C library's test reads (tests/size_cases.txt).
        let table = include_str!("../../../tests/size_cases.txt");
        let mut cases = 0;
        for line in table
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let close = line.rfind('\'').unwrap();
            let (text, want) = (&line[1..close], line[close + 1..].trim());
            match want {
                "bad" => assert!(parse_size(text).unwrap_err().starts_with("bad size '")),
                n => assert_eq!(parse_size(text), Ok(n.parse::<u64>().unwrap()), "{text}"),
            }
            cases += 1;
        }
        assert!(cases >= 30);
        assert_eq!(fmt_size(64 << 20), "64 MiB");
        assert_eq!(fmt_size(1536), "1.5 KiB");
        assert_eq!(fmt_size(1000), "1000 bytes");
        // The budget charges what nerve_chan_file_size says, for metadata
        // of any split (the rules themselves: tests/bridge/cases.txt).
        let split = nerve::Options::new()
            .slots(8)
            .data_size(4096)
            .type_name(&"t".repeat(200))
            .encoding(&"e".repeat(50))
            .schema(&[b's'; 4750]);
        let mut b = ImportBudget::new(1 << 40, 1 << 40);
        assert_eq!(b.admit("m", 8, 4096, 5000, true), None);
        assert_eq!(Ok(b.charged()), nerve::file_size(&split));
        assert!(b
            .admit("huge", 1 << 33, 4096, 0, true)
            .unwrap()
            .starts_with("nerve would not create it"));
        let mut b = ImportBudget::new(64 << 20, 3 << 20);
        assert!(b
            .admit("big", 8, 4 << 30, 0, true)
            .unwrap()
            .contains("data ring of 4 GiB"));
        assert!(b
            .admit("slots", 1 << 32, 4096, 0, true)
            .unwrap()
            .contains("index of 4294967296 slots"));
        assert_eq!(b.admit("a", 8, 2 << 20, 0, true), None);
        assert!(b
            .admit("b", 8, 2 << 20, 0, true)
            .unwrap()
            .contains("over --max-import-total (3 MiB)"));
        assert!(b.admit("b", 8, 2 << 20, 0, false).is_some());
        assert_eq!(b.refused(), 3);
        b.release("a");
        let two = nerve::Options::new().slots(8).data_size(2 << 20);
        assert_eq!(
            (b.admit("b", 8, 2 << 20, 0, true), Ok(b.charged())),
            (None, nerve::file_size(&two))
        );
    }
}
