//! Environment values as OpenMP runtimes read them, and as error messages quote them.
//!
//! OpenMP runtimes skip the blanks C's `isspace` sees around a value (ASCII white space and
//! the vertical tab), and nothing else: a no-break space is part of the value. Every variable
//! numatask reads is trimmed with [`trim_blanks`], so that one rule holds for all of them.
//! Messages quote values through [`shown`], which writes control characters as escapes: a
//! value refused for a tab or an escape inside it would otherwise look right in the message.

use std::borrow::Cow;

/// Whether `c` is a blank an OpenMP runtime skips (C's `isspace` in the C locale).
pub fn is_blank(c: char) -> bool {
    c.is_ascii_whitespace() || c == '\x0b'
}

/// `value` without the blanks around it ([`is_blank`]).
pub fn trim_blanks(value: &str) -> &str {
    value.trim_matches(is_blank)
}

/// `value` as a message quotes it: control characters escaped (`\t`, `\u{b}`), everything
/// else as written.
pub fn shown(value: &str) -> Cow<'_, str> {
    if !value.chars().any(char::is_control) {
        return Cow::Borrowed(value);
    }
    Cow::Owned(
        value
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_debug().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_removes_c_blanks_and_keeps_a_no_break_space() {
        assert_eq!(trim_blanks(" \t4\x0b\n"), "4");
        assert_eq!(
            trim_blanks("4\u{a0}"),
            "4\u{a0}",
            "a no-break space is not a blank"
        );
    }

    #[test]
    fn shown_escapes_control_characters_only() {
        assert_eq!(shown("{0},{1}"), "{0},{1}");
        assert_eq!(shown("{0},\x0b{1}"), "{0},\\u{b}{1}");
    }
}
