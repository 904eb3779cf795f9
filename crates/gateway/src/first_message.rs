//! The first message's identity fingerprint, remembered by the bytes it came as.
//!
//! Every request of a conversation carries the same first message (an agent's system prompt
//! or its task, often tens of kilobytes), and one agent's conversations mostly share it.
//! Fingerprinting it means reading it into a message and hashing its normalised text, a few
//! nanoseconds per character; finding it by its bytes ([`BytesMemo`]) costs a fraction of that.

use crate::bytes_memo::BytesMemo;
use crate::request::Request;

/// How many first messages' fingerprints are kept.
const KEPT: usize = 1024;

/// The most bytes of first messages kept.
const KEPT_BYTES: usize = 8 << 20;

/// First messages' fingerprints, by their bytes.
pub(crate) struct FirstMessages {
    known: BytesMemo<u64>,
}

impl FirstMessages {
    /// None known yet.
    pub(crate) fn new() -> Self {
        Self { known: BytesMemo::new(KEPT, KEPT_BYTES) }
    }

    /// The identity fingerprint of `request`'s first message (which it must have):
    /// [`Request::identity_hash`]`(0)`, read only when these bytes were not seen before.
    pub(crate) fn identity_hash(&self, request: &mut Request<'_>) -> Result<u64, String> {
        let pieces = [request.api().name().as_bytes(), request.raw(0).as_bytes()];
        self.known.get_or_work(&pieces, || request.identity_hash(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Api;

    fn body(api: Api, first: &str) -> Vec<u8> {
        let first = serde_json::json!({"role": "user", "content": first});
        let mut body =
            serde_json::json!({"model": "m", "messages": [first, {"role": "assistant", "content": "ok"}]});
        if api == Api::Responses {
            body = serde_json::json!({"model": "m", "input": body["messages"].clone()});
        }
        body.to_string().into_bytes()
    }

    #[test]
    fn a_first_message_seen_before_is_not_read_again_and_the_api_keeps_its_own() {
        let first = FirstMessages::new();
        let sent = body(Api::OpenAi, "Fix the build, then run the tests.");
        let mut once = Request::parse(Api::OpenAi, &sent).unwrap();
        let hash = first.identity_hash(&mut once).unwrap();
        assert!(once.is_converted(0), "read the first time");
        let mut again = Request::parse(Api::OpenAi, &sent).unwrap();
        assert_eq!(first.identity_hash(&mut again).unwrap(), hash);
        assert!(!again.is_converted(0), "known by its bytes the second time");
        // The same bytes on another API are that API's message, read anew.
        let mut other = Request::parse(Api::Anthropic, &sent).unwrap();
        let direct = Request::parse(Api::Anthropic, &sent).unwrap().identity_hash(0).unwrap();
        assert_eq!(first.identity_hash(&mut other).unwrap(), direct);
        assert!(other.is_converted(0));
    }

    proptest::proptest! {
        /// Remembered or read, the fingerprint is the one reading the message gives, on every
        /// API, for any text.
        #[test]
        fn a_remembered_fingerprint_is_the_one_reading_gives(
            texts in proptest::collection::vec("[a-c \\n\"\\\\é]{0,12}", 1..6),
            api in proptest::sample::select(vec![Api::OpenAi, Api::Anthropic, Api::Responses]),
        ) {
            let first = FirstMessages::new();
            for text in texts.iter().chain(texts.iter()) {
                let sent = body(api, text);
                let direct = Request::parse(api, &sent).unwrap().identity_hash(0).unwrap();
                let mut request = Request::parse(api, &sent).unwrap();
                proptest::prop_assert_eq!(first.identity_hash(&mut request).unwrap(), direct);
            }
        }
    }
}
