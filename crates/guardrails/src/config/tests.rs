//! The configuration's parsing and validation.

use super::*;

#[test]
fn errors_name_the_key() {
    let cases = [
        (r#"{"window": 1}"#, "window"),
        (r#"{"identical_threshold": 9}"#, "identical_threshold"),
        (r#"{"pattern_max_level": "panic"}"#, "pattern_max_level"),
        (r#"{"repeat_counter": {"max_repeats": 0}}"#, "repeat_counter.max_repeats"),
        (r#"{"repeat_counter": {"action": "explode"}}"#, "repeat_counter.action"),
        (r#"{"repeat_counter": {"per_tool": {"poll": 0}}}"#, "repeat_counter.per_tool.poll"),
        (r#"{"windw": 6}"#, "windw"),
        (r#"{"preset": "s9"}"#, "preset"),
        (r#"{"detectors": ["novelty", "novelty"]}"#, "detectors"),
        (r#"{"detectors": ["psychic"]}"#, "detectors[0]"),
        (r#"{"consecutive_steps": 1}"#, "consecutive_steps"),
        (r#"{"novelty_after": 0}"#, "novelty_after"),
        (r#"{"identical_call_nudge": 1}"#, "identical_call_nudge"),
        (r#"{"degenerate_reply": {"repeat_count": 1}}"#, "degenerate_reply.repeat_count"),
        (r#"{"degenerate_reply": {"chunk": 50}}"#, "degenerate_reply.chunk"),
    ];
    for (json, key) in cases {
        let err = GuardrailsConfig::from_json_str(json).unwrap_err();
        assert_eq!(err.key, key, "{json}: {err}");
    }
    assert_eq!(GuardrailsConfig::from_json_str("{}").unwrap(), GuardrailsConfig::default());
}

#[test]
fn a_preset_is_the_base_and_given_keys_override_it() {
    let literal = GuardrailsConfig::from_json_str(r#"{"preset": "s2-literal"}"#).unwrap();
    assert_eq!(literal, Preset::S2Literal.config());
    assert_eq!(literal.detectors, vec![DetectorKind::Thrash]);
    let tuned = GuardrailsConfig::from_json_str(r#"{"preset": "s2-literal", "window": 8}"#).unwrap();
    assert_eq!(tuned.window, 8);
    assert_eq!(tuned.escalation_gap, 1, "the rest stays the preset's");
    for preset in Preset::ALL {
        assert_eq!(Preset::from_name(preset.name()), Some(preset));
        preset.config().validate().unwrap();
        // A saved config reads back as itself.
        let json = serde_json::to_string(&preset.config()).unwrap();
        assert_eq!(GuardrailsConfig::from_json_str(&json).unwrap(), preset.config(), "{}", preset.name());
    }
}
