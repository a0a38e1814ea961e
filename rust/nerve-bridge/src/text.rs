//! The one escaping of the bridge's printed lines. Peer ids, channel
//! names and keys come from the network (a peer holding a valid
//! certificate may still send anything), so every line the bridge prints
//! goes through [`escape`]: control characters become escapes, never raw
//! bytes that a terminal would obey. The escapes are those of the nerve
//! command's `cli_text.c`, so a name reads the same in every tool:
//! `\\`, `\n`, `\t`, `\r`, `\b`, `\f`, and `\u001b` for the other C0 and
//! C1 controls and DEL.

use std::fmt::Write;

/// `s` with every control character escaped (see the module comment).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_control() => {
                // C0, DEL and C1: Unicode's Cc, as cli_text.c escapes.
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn controls_are_escaped_as_the_nerve_command_does() {
        assert_eq!(
            escape("evil\u{1b}]0;owned\u{7}\u{1b}[2J"),
            "evil\\u001b]0;owned\\u0007\\u001b[2J"
        );
        assert_eq!(
            escape("a\\b\nc\td\re\u{8}f\u{c}"),
            "a\\\\b\\nc\\td\\re\\bf\\f"
        );
        assert_eq!(escape("\u{7f}\u{9b}\u{a0}"), "\\u007f\\u009b\u{a0}");
        assert_eq!(escape("caméra/imu"), "caméra/imu");
        assert!(!escape("\u{1b}\u{9b}").contains(['\u{1b}', '\u{9b}']));
    }
}
