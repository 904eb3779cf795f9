//! Per-model prices, for the cost limit (F4).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::provider::Usage;

/// Prices of one model in currency units per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Per million uncached input tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
    /// Per million cache-read tokens; input price when unset.
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
    /// Per million cache-write tokens; input price when unset.
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
}

impl ModelPrice {
    /// The cost of `usage`. Cache tokens are priced on their own and not double counted:
    /// `input_tokens` is taken to include them, as OpenAI reports it.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cache_read_tokens.saturating_add(usage.cache_write_tokens);
        let plain_input = usage.input_tokens.saturating_sub(cached) as f64;
        let read = self.cache_read_per_mtok.unwrap_or(self.input_per_mtok);
        let write = self.cache_write_per_mtok.unwrap_or(self.input_per_mtok);
        (plain_input * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok
            + usage.cache_read_tokens as f64 * read
            + usage.cache_write_tokens as f64 * write)
            / 1_000_000.0
    }
}

/// Prices by model name. A dated model (`gpt-4o-2024-08-06`) falls back to the longest
/// configured prefix (`gpt-4o`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable {
    /// The entries.
    pub models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// Adds or replaces one model's price.
    #[must_use]
    pub fn with(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.models.insert(model.into(), price);
        self
    }

    /// The price for `model`: exact name first, then the longest configured prefix.
    pub fn lookup(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(price) = self.models.get(model) {
            return Some(price);
        }
        self.models
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| price)
    }

    /// The cost of `usage` on `model`; zero for models without a price.
    pub fn cost(&self, model: &str, usage: &Usage) -> f64 {
        self.lookup(model).map_or(0.0, |p| p.cost(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_models_use_the_longest_prefix_and_cache_tokens_are_not_double_counted() {
        let table = PriceTable::default()
            .with("gpt-4o", ModelPrice { input_per_mtok: 2.5, output_per_mtok: 10.0, ..Default::default() })
            .with(
                "gpt-4o-mini",
                ModelPrice {
                    input_per_mtok: 0.15,
                    output_per_mtok: 0.6,
                    cache_read_per_mtok: Some(0.075),
                    ..Default::default()
                },
            );
        let usage = Usage { input_tokens: 1_000_000, output_tokens: 1_000_000, ..Usage::default() };
        assert!((table.cost("gpt-4o-2024-08-06", &usage) - 12.5).abs() < 1e-9);
        let cached = Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cache_read_tokens: 500_000,
            ..Usage::default()
        };
        let expected = 0.5 * 0.15 + 0.5 * 0.075;
        assert!((table.cost("gpt-4o-mini-2024", &cached) - expected).abs() < 1e-9);
        assert_eq!(table.cost("claude-x", &usage), 0.0);
    }
}
