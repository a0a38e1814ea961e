//! What crosses the network (docs/bridge.md, "What crosses, and how"): key
//! expressions, the 32-byte header in each data sample's attachment, the
//! batch table and the channel description. The Python side keeps only the
//! key expressions and the Zenoh session set-up of `nerve ls --remote`
//! (python-tools/src/nerve_tools/bridge/wire.py).
use serde_json::{json, Value};

/// Version of the header and of the description.
pub const WIRE_VERSION: u8 = 1;
/// Header: magic "NV", version (u8), flags (u8), reserved (u32, 0), origin
/// sequence number (u64), origin commit time as CLOCK_REALTIME ns (i64),
/// origin channel epoch = its creation time, CLOCK_REALTIME ns (i64), all
/// little-endian.
pub const HEADER_LEN: usize = 32;
/// One batch table entry: sequence number (u64), CLOCK_REALTIME commit time
/// (i64), length (i64).
pub const ENTRY_LEN: usize = 24;
/// flags: the payload holds several messages back to back.
pub const BATCH: u8 = 0x1;

pub fn data_key(domain: u64, host: &str, name: &str) -> String {
    format!("nerve/{domain}/data/{host}/{name}")
}
pub fn live_key(domain: u64, host: &str, name: &str) -> String {
    format!("nerve/{domain}/live/{host}/{name}")
}
pub fn meta_key(domain: u64, host: &str, name: &str) -> String {
    format!("nerve/{domain}/meta/{host}/{name}")
}

/// A liveliness token per running bridge: HOST its id, ZID its Zenoh
/// session id. Two tokens under one HOST with different ZIDs are two
/// bridges claiming one id.
pub fn node_key(domain: u64, host: &str, zid: &str) -> String {
    format!("nerve/{domain}/node/{host}/{zid}")
}

/// (domain, kind, host, name) of a bridge key expression.
pub fn split_key(key: &str) -> Option<(u64, &str, &str, &str)> {
    let p: Vec<&str> = key.split('/').collect();
    if p.len() != 5 || p[0] != "nerve" {
        return None;
    }
    Some((p[1].parse().ok()?, p[2], p[3], p[4]))
}

/// Whether `s` is a valid key-expression chunk for a host name.
pub fn valid_host(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// The header of a sample holding one message.
pub fn pack_header(seq: u64, t_real: i64, epoch: i64, flags: u8) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(b"NV");
    h.push(WIRE_VERSION);
    h.push(flags);
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&seq.to_le_bytes());
    h.extend_from_slice(&t_real.to_le_bytes());
    h.extend_from_slice(&epoch.to_le_bytes());
    h
}

/// The attachment of a batch: the header (of the first message), then one
/// entry per message.
pub fn pack_table(table: &[(u64, i64, i64)], epoch: i64) -> Vec<u8> {
    let mut h = pack_header(table[0].0, table[0].1, epoch, BATCH);
    h.reserve(table.len() * ENTRY_LEN);
    for &(s, t, n) in table {
        h.extend_from_slice(&s.to_le_bytes());
        h.extend_from_slice(&t.to_le_bytes());
        h.extend_from_slice(&n.to_le_bytes());
    }
    h
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// A batch table: (sequence number, CLOCK_REALTIME time, length) per
/// message.
pub type Table = Vec<(u64, i64, i64)>;

/// (epoch, [(seq, t_real, len)]) of a sample whose payload is
/// `payload_len` bytes: the messages lie back to back in the payload. An
/// error (with the reason) for a missing or bad header, or a batch table
/// that does not match the payload.
pub fn unpack_table(att: Option<&[u8]>, payload_len: usize) -> Result<(i64, Table), &'static str> {
    let att = match att {
        Some(a) if a.len() >= HEADER_LEN => a,
        _ => return Err("missing or short header"),
    };
    let (flags, seq, t_real, epoch) = (att[3], u64_at(att, 8), i64_at(att, 16), i64_at(att, 24));
    if &att[..2] != b"NV"
        || att[2] != WIRE_VERSION
        || seq == 0
        || seq >= 1 << 63
        || flags & !BATCH != 0
    {
        return Err("bad header");
    }
    if flags & BATCH == 0 {
        if att.len() != HEADER_LEN {
            return Err("bad header length");
        }
        return Ok((epoch, vec![(seq, t_real, payload_len as i64)]));
    }
    let rest = &att[HEADER_LEN..];
    if rest.is_empty() || rest.len() % ENTRY_LEN != 0 {
        return Err("bad batch table");
    }
    let table: Table = rest
        .chunks_exact(ENTRY_LEN)
        .map(|e| (u64_at(e, 0), i64_at(e, 8), i64_at(e, 16)))
        .collect();
    if table[0].0 != seq || table.windows(2).any(|w| w[0].0 as i64 >= w[1].0 as i64) {
        return Err("bad batch entry: sequence numbers not increasing");
    }
    let mut sum: i128 = 0;
    for &(_, _, n) in &table {
        if n < 0 {
            return Err("batch table does not match the payload");
        }
        sum += n as i128;
    }
    if sum != payload_len as i128 {
        return Err("batch table does not match the payload");
    }
    Ok((epoch, table))
}

/// What a host says about a channel it exports (the queryable's JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    pub host: String,
    pub name: String,
    pub slots: u64,
    pub data_size: u64,
    pub type_name: Option<String>,
    pub encoding: Option<String>,
    pub schema: Option<Vec<u8>>,
    pub epoch: i64,
    pub head_seq: u64,
    pub rate_hz: f64,
}

impl Description {
    pub fn to_json(&self) -> String {
        let rate = (self.rate_hz * 1000.0).round() / 1000.0;
        json!({
            "version": WIRE_VERSION, "host": self.host, "name": self.name,
            "slots": self.slots, "data_size": self.data_size,
            "type": self.type_name, "encoding": self.encoding,
            "schema_base64": self.schema.as_deref().filter(|s| !s.is_empty()).map(b64_encode),
            "epoch": self.epoch, "head_seq": self.head_seq, "rate_hz": rate,
        })
        .to_string()
    }

    /// Parse and validate.
    pub fn from_json(text: &[u8]) -> Result<Description, String> {
        let d: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
        let d = match d.as_object() {
            Some(o) if o.get("version").and_then(Value::as_f64) == Some(1.0) => o,
            _ => return Err("not a nerve channel description of version 1".into()),
        };
        let string = |k: &str, optional: bool| -> Result<Option<String>, String> {
            match d.get(k) {
                None | Some(Value::Null) if optional => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                _ => Err(format!("field '{k}' missing or not str")),
            }
        };
        let int = |k: &str| -> Result<u64, String> {
            d.get(k)
                .and_then(|v| if v.is_f64() { None } else { v.as_u64() })
                .ok_or_else(|| format!("field '{k}' missing or not int"))
        };
        let name = string("name", false)?.unwrap();
        let host = string("host", false)?.unwrap();
        if nerve::name_check(&name).is_err() || !valid_host(&host) {
            return Err(format!("bad channel name '{name}' or host '{host}'"));
        }
        let (slots, size) = (int("slots")?, int("data_size")?);
        if !(1..=1 << 32).contains(&slots) || !(1..=1 << 40).contains(&size) {
            return Err("geometry out of range".into());
        }
        let schema = match string("schema_base64", true)? {
            Some(s) if !s.is_empty() => Some(b64_decode(&s).ok_or("schema_base64 is not base64")?),
            _ => None,
        };
        let num_or0 = |k: &str| d.get(k).and_then(Value::as_i64).unwrap_or(0);
        Ok(Description {
            host,
            name,
            slots,
            data_size: size,
            type_name: string("type", true)?,
            encoding: string("encoding", true)?,
            schema,
            epoch: num_or0("epoch"),
            head_seq: num_or0("head_seq").max(0) as u64,
            rate_hz: d.get("rate_hz").and_then(Value::as_f64).unwrap_or(0.0),
        })
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// RFC 4648 base64 with padding.
pub fn b64_encode(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Strict RFC 4648 base64 (padding required, no other characters), as
/// Python's `b64decode(validate=True)`.
pub fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return None;
    }
    let val = |c: u8| B64.iter().position(|&x| x == c).map(|v| v as u32);
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, q) in b.chunks(4).enumerate() {
        let last = i == b.len() / 4 - 1;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = n << 6 | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_bad_input() {
        let h = pack_header(7, -3, 99, 0);
        assert_eq!(h.len(), HEADER_LEN);
        assert_eq!(&h[..8], b"NV\x01\x00\x00\x00\x00\x00");
        assert_eq!(unpack_table(Some(&h), 5), Ok((99, vec![(7, -3, 5)])));
        let t = pack_table(&[(3, 10, 2), (5, 11, 0), (6, 12, 4)], 1);
        assert_eq!(t.len(), HEADER_LEN + 3 * ENTRY_LEN);
        assert_eq!(unpack_table(Some(&t), 6).unwrap().1.len(), 3);
        assert!(unpack_table(Some(&t), 7).is_err());
        assert!(unpack_table(None, 0).is_err());
        assert!(unpack_table(Some(&h[..31]), 0).is_err());
        let mut bad = h.clone();
        bad[0] = b'X';
        assert!(unpack_table(Some(&bad), 1).is_err());
        let zero = pack_header(0, 0, 0, 0);
        assert!(unpack_table(Some(&zero), 1).is_err());
        let mut long = h.clone();
        long.push(0);
        assert!(unpack_table(Some(&long), 1).is_err());
        let unordered = pack_table(&[(3, 0, 1), (3, 0, 1)], 0);
        assert!(unpack_table(Some(&unordered), 2).is_err());
        let neg = pack_table(&[(3, 0, -1), (4, 0, 2)], 0);
        assert!(unpack_table(Some(&neg), 1).is_err());
    }

    #[test]
    fn description_round_trip_and_validation() {
        let d = Description {
            host: "h1".into(),
            name: "cam.left".into(),
            slots: 8,
            data_size: 1 << 20,
            type_name: Some("t/T".into()),
            encoding: None,
            schema: Some(b"ab\xffc".to_vec()),
            epoch: 5,
            head_seq: 9,
            rate_hz: 29.97,
        };
        assert_eq!(
            Description::from_json(d.to_json().as_bytes()),
            Ok(d.clone())
        );
        for bad in [
            &b"junk"[..],
            br#"{"version": 2}"#,
            br#"{"version": 1, "host": "h", "name": "../x", "slots": 1, "data_size": 1}"#,
            br#"{"version": 1, "host": "h", "name": "x", "slots": 0, "data_size": 1}"#,
            br#"{"version": 1, "host": "h", "name": "x", "slots": 1.5, "data_size": 1}"#,
            br#"{"version": 1, "host": "h", "name": "x", "slots": 1, "data_size": 1, "schema_base64": "!!"}"#,
        ] {
            assert!(Description::from_json(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn base64_round_trip() {
        for s in [&b""[..], b"f", b"fo", b"foo", b"foob", b"\x00\xff\x10"] {
            assert_eq!(b64_decode(&b64_encode(s)).as_deref(), Some(s));
        }
        assert_eq!(b64_encode(b"foob"), "Zm9vYg==");
        assert!(b64_decode("Zm9=vYg=").is_none() && b64_decode("abc").is_none());
    }
}
