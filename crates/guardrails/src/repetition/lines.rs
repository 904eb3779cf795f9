//! Where a reply's text stands in its markdown lines: inside a code fence, on a table row
//! (where the detector needs more repeats).

/// Where the text stands in its lines: inside a code fence, on a table row, and the first
/// bytes of the current line (up to 3).
#[derive(Debug, Clone, Default)]
pub(super) struct LineState {
    pub(super) in_fence: bool,
    pub(super) table_line: bool,
    line_head: [u8; 3],
    line_head_len: u8,
}

impl LineState {
    /// Follows code fences (``` or ~~~ opening a line) and table rows (`|` opening a line).
    pub(super) fn track(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        loop {
            // The start of the current line, up to three bytes.
            while self.line_head_len < 3 {
                let Some((&b, tail)) = rest.split_first() else { return };
                if b == b'\n' {
                    break;
                }
                self.line_head[self.line_head_len as usize] = b;
                self.line_head_len += 1;
                if self.line_head_len == 1 {
                    self.table_line = b == b'|';
                }
                if self.line_head_len == 3 && matches!(&self.line_head, b"```" | b"~~~") {
                    self.in_fence = !self.in_fence;
                }
                rest = tail;
            }
            match memchr::memchr(b'\n', rest) {
                Some(at) => {
                    rest = &rest[at + 1..];
                    self.line_head_len = 0;
                    self.table_line = false;
                }
                None => return,
            }
        }
    }
}
