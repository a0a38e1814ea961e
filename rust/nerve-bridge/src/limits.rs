//! Bounds on what a remote peer may make this host allocate: the same
//! rules, flags, environment variables and messages as the Python tools'
//! `nerve_tools/_limits.py` (its docstring is the specification):
//! `--max-channel-size SIZE` (`NERVE_MAX_CHANNEL_SIZE`, default 64M) bounds
//! a channel's data ring and its index; `--max-import-total SIZE`
//! (`NERVE_MAX_IMPORT_TOTAL`, default 512M) bounds the files of all
//! channels made from peers' descriptions together. A flag overrides the
//! environment, which overrides the default.
use std::collections::HashMap;

pub const DEFAULT_MAX_CHANNEL: u64 = 64 << 20;
pub const DEFAULT_MAX_TOTAL: u64 = 512 << 20;
pub const ENV_MAX_CHANNEL: &str = "NERVE_MAX_CHANNEL_SIZE";
pub const ENV_MAX_TOTAL: &str = "NERVE_MAX_IMPORT_TOTAL";
const PAGE: u64 = 4096;
const INDEX_ENTRY: u64 = 32;

/// `"64M"` -> 67108864: digits, an optional K/M/G/T (powers of 1024) and
/// an optional `B`/`iB`, case-insensitive, blanks around.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("bad size '{text}': a byte count with an optional K, M, G or T suffix, e.g. 64M")
    };
    let t = text.trim().to_ascii_lowercase();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = t[..digits].parse().map_err(|_| bad())?;
    let mut rest = t[digits..].trim_start();
    let shift = match rest.chars().next() {
        Some(c @ ('k' | 'm' | 'g' | 't')) => {
            rest = &rest[1..];
            match c {
                'k' => 10,
                'm' => 20,
                'g' => 30,
                _ => 40,
            }
        }
        _ => 0,
    };
    if !matches!(rest, "" | "b" | "ib") {
        return Err(bad());
    }
    n.checked_mul(1 << shift).ok_or_else(bad)
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

fn round(n: u64) -> u64 {
    n.div_ceil(PAGE).saturating_mul(PAGE)
}

/// The size of a channel's file: header page, metadata, index and data
/// ring, each in pages (docs/design/0001-shm-layout.md).
pub fn channel_file_bytes(slots: u64, data_size: u64, meta_bytes: u64) -> u64 {
    PAGE.saturating_add(round(meta_bytes + 3))
        .saturating_add(round(INDEX_ENTRY.saturating_mul(slots)))
        .saturating_add(round(data_size))
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
        let need = channel_file_bytes(slots, data_size, meta_bytes);
        let why = if data_size > self.max_channel {
            Some(format!(
                "its data ring of {} is over --max-channel-size ({})",
                fmt_size(data_size),
                fmt_size(self.max_channel)
            ))
        } else if INDEX_ENTRY.saturating_mul(slots) > self.max_channel {
            Some(format!(
                "its index of {slots} slots ({}) is over --max-channel-size ({})",
                fmt_size(INDEX_ENTRY * slots),
                fmt_size(self.max_channel)
            ))
        } else {
            let used: u64 = self
                .charged
                .iter()
                .filter(|(k, _)| k.as_str() != name)
                .map(|(_, v)| v)
                .sum();
            (used + need > self.max_total).then(|| {
                format!(
                    "its {} with the {} already imported is over --max-import-total ({})",
                    fmt_size(need),
                    fmt_size(used),
                    fmt_size(self.max_total)
                )
            })
        };
        match &why {
            None => {
                self.charged.insert(name.to_string(), need);
            }
            Some(_) if count => self.refused += 1,
            Some(_) => {}
        }
        why
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
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size(" 3 kib "), Ok(3072));
        assert_eq!(parse_size("12"), Ok(12));
        assert_eq!(parse_size("2GB"), Ok(2 << 30));
        assert!(parse_size("12Q").unwrap_err().starts_with("bad size '12Q'"));
        assert!(
            parse_size("").is_err() && parse_size("-1").is_err() && parse_size("1.5M").is_err()
        );
        assert_eq!(fmt_size(64 << 20), "64 MiB");
        assert_eq!(fmt_size(1536), "1.5 KiB");
        assert_eq!(fmt_size(1000), "1000 bytes");
        assert_eq!(channel_file_bytes(8, 4096, 0), 4096 * 4);
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
            (None, channel_file_bytes(8, 2 << 20, 0))
        );
    }
}
