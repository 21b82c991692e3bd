//! Decodes the bytes a terminal in raw mode sends for key presses into crossterm's
//! [`KeyEvent`]s: printable characters (UTF-8), control characters (Ctrl-C is byte 3 in raw
//! mode), Enter, Backspace, Tab, Esc, and the cursor and paging keys in their CSI (`ESC [`) and
//! SS3 (`ESC O`) forms. Sequences the monitor has no use for (function keys, mouse reports) are
//! skipped whole.
//!
//! The monitor reads the terminal itself (see `input.rs`), so it decodes here what crossterm's
//! reader would have: only the keys the monitor binds need to be exact.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const ESC: u8 = 0x1b;

/// The keys in one read of the terminal. A read ends a sequence: an `ESC` that ends the bytes
/// is the Esc key, and a sequence cut short is dropped.
pub fn decode(bytes: &[u8]) -> Vec<KeyEvent> {
    let mut keys = Vec::new();
    let mut rest = bytes;
    while let Some(&first) = rest.first() {
        let (key, used) = match first {
            ESC => escape(rest),
            b'\r' | b'\n' => (Some(KeyCode::Enter.into()), 1),
            b'\t' => (Some(KeyCode::Tab.into()), 1),
            0x7f | 0x08 => (Some(KeyCode::Backspace.into()), 1),
            0x01..=0x1a => {
                let letter = char::from(first - 1 + b'a');
                let key = KeyEvent::new(KeyCode::Char(letter), KeyModifiers::CONTROL);
                (Some(key), 1)
            }
            0x00..=0x1f => (None, 1),
            _ => character(rest),
        };
        keys.extend(key);
        rest = &rest[used.max(1).min(rest.len())..];
    }
    keys
}

/// One UTF-8 character (an invalid byte is skipped).
fn character(bytes: &[u8]) -> (Option<KeyEvent>, usize) {
    let len = match bytes[0] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let text = bytes.get(..len).and_then(|b| std::str::from_utf8(b).ok());
    match text.and_then(|t| t.chars().next()) {
        Some(c) => (Some(KeyCode::Char(c).into()), len),
        None => (None, 1),
    }
}

/// A sequence starting with `ESC`: CSI, SS3, or the Esc key itself.
fn escape(bytes: &[u8]) -> (Option<KeyEvent>, usize) {
    match bytes.get(1) {
        None => (Some(KeyCode::Esc.into()), 1),
        Some(b'[') => csi(bytes),
        Some(b'O') => match bytes.get(2) {
            Some(&last) => (cursor_key(last).map(KeyEvent::from), 3),
            None => (None, 2),
        },
        // Esc pressed just before another key: both, in order.
        Some(_) => (Some(KeyCode::Esc.into()), 1),
    }
}

/// `ESC [ <parameters> <final byte>`: the cursor keys (`A`–`D`, `H`, `F`) and the `~` keys
/// (1/7 Home, 4/8 End, 5 Page Up, 6 Page Down, 3 Delete, 2 Insert). Modifiers are ignored.
fn csi(bytes: &[u8]) -> (Option<KeyEvent>, usize) {
    let body = &bytes[2..];
    let Some(end) = body.iter().position(|b| (0x40..=0x7e).contains(b)) else {
        return (None, bytes.len());
    };
    let used = 2 + end + 1;
    let params = std::str::from_utf8(&body[..end]).unwrap_or("");
    let code = match body[end] {
        b'~' => match params.split(';').next().unwrap_or("") {
            "1" | "7" => Some(KeyCode::Home),
            "4" | "8" => Some(KeyCode::End),
            "5" => Some(KeyCode::PageUp),
            "6" => Some(KeyCode::PageDown),
            "3" => Some(KeyCode::Delete),
            "2" => Some(KeyCode::Insert),
            _ => None,
        },
        last => cursor_key(last),
    };
    (code.map(KeyEvent::from), used)
}

fn cursor_key(last: u8) -> Option<KeyCode> {
    match last {
        b'A' => Some(KeyCode::Up),
        b'B' => Some(KeyCode::Down),
        b'C' => Some(KeyCode::Right),
        b'D' => Some(KeyCode::Left),
        b'H' => Some(KeyCode::Home),
        b'F' => Some(KeyCode::End),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(bytes: &[u8]) -> Vec<KeyCode> {
        decode(bytes).into_iter().map(|k| k.code).collect()
    }

    #[test]
    fn characters_and_control_keys() {
        assert_eq!(
            codes("jé/€".as_bytes()),
            [
                KeyCode::Char('j'),
                KeyCode::Char('é'),
                KeyCode::Char('/'),
                KeyCode::Char('€')
            ]
        );
        assert_eq!(
            codes(b"\r\n\x7f\x08\t"),
            [
                KeyCode::Enter,
                KeyCode::Enter,
                KeyCode::Backspace,
                KeyCode::Backspace,
                KeyCode::Tab
            ]
        );
        let ctrl_c = decode(b"\x03");
        assert_eq!(ctrl_c[0].code, KeyCode::Char('c'));
        assert!(ctrl_c[0].modifiers.contains(KeyModifiers::CONTROL));
        assert_eq!(codes(b"\x00\x1c\xff"), []);
    }

    #[test]
    fn escape_sequences() {
        assert_eq!(codes(b"\x1b"), [KeyCode::Esc]);
        assert_eq!(codes(b"\x1bq"), [KeyCode::Esc, KeyCode::Char('q')]);
        assert_eq!(
            codes(b"\x1b[A\x1b[B\x1bOC\x1bOD\x1b[1;5H\x1b[F"),
            [
                KeyCode::Up,
                KeyCode::Down,
                KeyCode::Right,
                KeyCode::Left,
                KeyCode::Home,
                KeyCode::End
            ]
        );
        assert_eq!(
            codes(b"\x1b[5~\x1b[6~\x1b[1~\x1b[4~\x1b[7~\x1b[8~"),
            [
                KeyCode::PageUp,
                KeyCode::PageDown,
                KeyCode::Home,
                KeyCode::End,
                KeyCode::Home,
                KeyCode::End
            ]
        );
        // Unknown sequences are skipped whole; a cut-off one is dropped.
        assert_eq!(
            codes(b"\x1b[15~x\x1b[<0;3;4Mq"),
            [KeyCode::Char('x'), KeyCode::Char('q')]
        );
        assert_eq!(codes(b"k\x1b[1;"), [KeyCode::Char('k')]);
        assert_eq!(codes(b"\x1bO"), []);
    }
}
