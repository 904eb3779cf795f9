//! The logs' timestamps: RFC 3339 text (`2026-12-02T07:00:58.123Z`, with any offset), read as
//! milliseconds since the epoch.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `text` as ms since the epoch, when it is an RFC 3339 timestamp.
pub fn epoch_ms(text: &str) -> Option<i64> {
    let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_with_their_offsets_and_others_do_not() {
        assert_eq!(epoch_ms("1970-01-01T00:00:01.5Z"), Some(1_500));
        assert_eq!(epoch_ms("2026-12-02T08:00:00+01:00"), epoch_ms("2026-12-02T07:00:00Z"));
        assert_eq!(epoch_ms("yesterday"), None);
        assert_eq!(epoch_ms("2026-13-02T07:00:00Z"), None);
    }
}
