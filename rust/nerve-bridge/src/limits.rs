//! Bounds on what a remote peer may make this host allocate: the same
//! rules, flags, environment variables and messages as the Python tools'
//! `nerve_tools/_limits.py` (its docstring is the specification):
//! `--max-channel-size SIZE` (`NERVE_MAX_CHANNEL_SIZE`, default 64M) bounds
//! a channel's data ring and its index; `--max-import-total SIZE`
//! (`NERVE_MAX_IMPORT_TOTAL`, default 512M) bounds the files of all
//! channels made from peers' descriptions together. A flag overrides the
//! environment, which overrides the default. Sizes and file sizes come
//! from the C library (`nerve::parse_size`, `nerve::file_size`), so neither
//! the size grammar nor the page size is spelled here.
use std::collections::HashMap;

pub const DEFAULT_MAX_CHANNEL: u64 = 64 << 20;
pub const DEFAULT_MAX_TOTAL: u64 = 512 << 20;
pub const ENV_MAX_CHANNEL: &str = "NERVE_MAX_CHANNEL_SIZE";
pub const ENV_MAX_TOTAL: &str = "NERVE_MAX_IMPORT_TOTAL";
/// The bytes of one index entry (docs/design/0001-shm-layout.md), for the
/// bound on a channel's index.
const INDEX_ENTRY: u64 = 32;

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

/// The size of a channel's file (what it commits in /dev/shm), from the C
/// library (`nerve_chan_file_size`), for `meta_bytes` of metadata (type +
/// encoding + schema): the file's cost depends only on the metadata's
/// total length, so a schema of that many bytes stands in for it. Why
/// not, for a geometry `nerve::create` would refuse.
pub fn channel_file_bytes(slots: u64, data_size: u64, meta_bytes: u64) -> Result<u64, String> {
    let meta = vec![b'x'; usize::try_from(meta_bytes).map_err(|_| "metadata too large")?];
    let opts = nerve::Options::new()
        .slots(slots)
        .data_size(data_size)
        .schema(&meta);
    nerve::file_size(&opts).map_err(|e| format!("nerve would not create it: {}", e.detail()))
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
/// channel names). Used from the bridge's main thread only.
pub struct ImportBudget {
    pub max_channel: u64,
    pub max_total: u64,
    pub refused: u64,
    charged: HashMap<String, u64>,
}

impl ImportBudget {
    pub fn new(max_channel: u64, max_total: u64) -> ImportBudget {
        ImportBudget {
            max_channel,
            max_total,
            refused: 0,
            charged: HashMap::new(),
        }
    }

    pub fn charged(&self) -> u64 {
        self.charged.values().sum()
    }

    /// Reserve the file of channel `name` before it is created: `None`
    /// (charged; `release` it once gone or not made), or why not (counted
    /// in `refused` when `count`).
    pub fn admit(
        &mut self,
        name: &str,
        slots: u64,
        data_size: u64,
        meta_bytes: u64,
        count: bool,
    ) -> Option<String> {
        let mut need = 0;
        let why = self.over_channel(slots, data_size).or_else(|| {
            need = match channel_file_bytes(slots, data_size, meta_bytes) {
                Ok(n) => n,
                Err(why) => return Some(why),
            };
            let used: u64 = self
                .charged
                .iter()
                .filter(|(k, _)| k.as_str() != name)
                .map(|(_, v)| v)
                .sum();
            (used.saturating_add(need) > self.max_total).then(|| {
                format!(
                    "its {} with the {} already imported is over --max-import-total ({})",
                    fmt_size(need),
                    fmt_size(used),
                    fmt_size(self.max_total)
                )
            })
        });
        match &why {
            None => {
                self.charged.insert(name.to_string(), need);
            }
            Some(_) if count => self.refused += 1,
            Some(_) => {}
        }
        why
    }

    /// Why one channel of this geometry is over --max-channel-size.
    fn over_channel(&self, slots: u64, data_size: u64) -> Option<String> {
        if data_size > self.max_channel {
            return Some(format!(
                "its data ring of {} is over --max-channel-size ({})",
                fmt_size(data_size),
                fmt_size(self.max_channel)
            ));
        }
        let index = INDEX_ENTRY.saturating_mul(slots);
        (index > self.max_channel).then(|| {
            format!(
                "its index of {slots} slots ({}) is over --max-channel-size ({})",
                fmt_size(index),
                fmt_size(self.max_channel)
            )
        })
    }

    pub fn release(&mut self, name: &str) {
        self.charged.remove(name);
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
        let opts = nerve::Options::new()
            .slots(8)
            .data_size(4096)
            .type_name(&"t".repeat(200))
            .encoding(&"e".repeat(50))
            .schema(&[b's'; 4750]);
        assert_eq!(
            channel_file_bytes(8, 4096, 5000),
            nerve::file_size(&opts).map_err(|e| e.to_string())
        );
        assert!(channel_file_bytes(8, 4096, 5000) > channel_file_bytes(8, 4096, 0));
        assert!(channel_file_bytes(8, u64::MAX, 0)
            .unwrap_err()
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
        assert_eq!(b.refused, 3);
        b.release("a");
        assert_eq!(
            (b.admit("b", 8, 2 << 20, 0, true), b.charged()),
            (None, channel_file_bytes(8, 2 << 20, 0).unwrap())
        );
    }
}
