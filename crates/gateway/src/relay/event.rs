//! The bytes of one server-sent event: where it ends, its name and data, and whether a piece
//! of a stream may hold the event that ends it.

use crate::wire::Api;

/// Whether `piece` of an `api` stream may hold an event that ends it (its terminal event or an
/// error), so that it must be read before the client has it: a stream's end is stored before
/// the client sees it. A Responses stream's pieces are always read first.
pub fn may_end(api: Api, piece: &[u8]) -> bool {
    let holds = |needle: &[u8]| piece.windows(needle.len()).any(|w| w == needle);
    match api {
        Api::OpenAi => holds(b"[DONE]") || holds(b"error"),
        Api::Anthropic => holds(b"message_stop") || holds(b"error"),
        Api::Responses => true,
    }
}

/// Whether `piece` is whole events: it ends where an event ends.
pub fn whole_events(piece: &[u8]) -> bool {
    let mut at = 0;
    while at < piece.len() {
        match find_event_end(&piece[at..]) {
            Some((length, separator)) => at += length + separator,
            None => return false,
        }
    }
    at == piece.len()
}

/// An event's name (empty when it has none) and its data lines joined (`None` when it has
/// none: a comment, a keep-alive), read from its bytes (without the blank line ending it).
pub(super) fn event_fields(event: &[u8]) -> (String, Option<String>) {
    let text = String::from_utf8_lossy(event);
    let (mut name, mut data) = (String::new(), None::<String>);
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            name = value.trim().to_owned();
        } else if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    (name, data)
}

/// Where the first complete event ends: (its length, the separator's length).
pub(super) fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_data_lines_are_joined_and_an_event_without_data_is_none() {
        let event = b": a comment\r\nevent:  message_start \r\ndata: {\"a\":\r\ndata:1}\r\nid: 7";
        assert_eq!(event_fields(event), ("message_start".to_owned(), Some("{\"a\":\n1}".to_owned())));
        assert_eq!(event_fields(b"data:x\ndata: y\ndata:"), (String::new(), Some("x\ny\n".to_owned())));
        assert_eq!(event_fields(b": keep-alive\nevent: ping"), ("ping".to_owned(), None));
    }

    #[test]
    fn only_a_piece_without_an_end_or_an_error_may_leave_unread() {
        let role =
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        let start =
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n";
        assert!(!may_end(Api::OpenAi, role) && !may_end(Api::Anthropic, start));
        assert!(may_end(Api::OpenAi, b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n"));
        assert!(may_end(Api::OpenAi, b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n"));
        assert!(may_end(Api::Anthropic, b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        assert!(may_end(Api::Anthropic, b"event: error\ndata: {\"type\":\"error\"}\n\n"));
        // Cut inside a name, what arrived cannot end the stream yet: the next piece is read first.
        assert!(!may_end(Api::Anthropic, b"event: message_st"));
        assert!(
            may_end(Api::Responses, b"event: response.created\ndata: {}\n\n"),
            "Responses: always read first"
        );
    }
}
