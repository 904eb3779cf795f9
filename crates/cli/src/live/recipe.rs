//! [`Recipe`]: everything a process needs to execute a run as its submitter asked — API,
//! model, base URL, work directory, streaming, fallback and summary models, the whole config —
//! stored with the run (never the API key: the executing process reads it from its
//! environment). `run` and `submit` write it; `resume`, `answer`, `resolve` and `worker` read
//! it back, and flags given to them replace its parts.

use std::path::PathBuf;
use std::sync::Arc;

use looprail::LooprailConfig;
use looprail::core::provider::Provider;
use looprail::providers::{AnthropicClient, ClientConfig, OpenAiClient};
use looprail::retry::{FallbackChain, Retry};
use serde::{Deserialize, Serialize};

use super::args::{ModelArgs, ProviderKind};
use super::show::printer;

/// The models of a run.
pub struct Models {
    /// The main model, behind its fallback chain when there is one.
    pub main: Arc<dyn Provider>,
    /// The compaction summarizer, when a summary model is set.
    pub summarizer: Option<Arc<dyn Provider>>,
}

/// How a run is executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// The API.
    pub provider: ProviderKind,
    /// The model.
    pub model: String,
    /// Another base URL, if any.
    pub base_url: Option<String>,
    /// The work directory of the file tools (absolute).
    pub workdir: PathBuf,
    /// Whether answers are streamed.
    pub stream: bool,
    /// Fallback models, in order.
    pub fallback_models: Vec<String>,
    /// The summary model.
    pub summary_model: Option<String>,
    /// The configuration in force when the run was submitted.
    pub config: LooprailConfig,
}

fn load_config(path: &std::path::Path) -> Result<LooprailConfig, String> {
    LooprailConfig::from_path(path).map_err(|e| format!("{e} (in {})", path.display()))
}

fn absolute(dir: &std::path::Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(dir).map_err(|e| format!("work directory {}: {e}", dir.display()))
}

impl Recipe {
    /// The recipe of a new run.
    pub fn new(args: &ModelArgs) -> Result<Self, String> {
        let (Some(provider), Some(model)) = (args.provider, args.model.clone()) else {
            return Err("a new run needs --provider and --model".to_owned());
        };
        let config = match &args.config {
            Some(path) => load_config(path)?,
            None => LooprailConfig::default(),
        };
        let mut recipe = Self {
            provider,
            model,
            base_url: None,
            workdir: absolute(std::path::Path::new("."))?,
            stream: true,
            fallback_models: config.provider.fallback_models.clone(),
            summary_model: config.provider.summary_model.clone(),
            config,
        };
        recipe.overlay(args)?;
        Ok(recipe)
    }

    /// The recipe stored with run `run_id`, with the flags of `args` replacing its parts; a run
    /// stored without one (by an older looprail) needs `--provider` and `--model`.
    pub fn stored(
        run_id: &str,
        stored: Option<&serde_json::Value>,
        args: &ModelArgs,
    ) -> Result<Self, String> {
        let Some(value) = stored else {
            return Self::new(args).map_err(|_| {
                format!("run `{run_id}` has no stored recipe (an older looprail made it): pass --provider and --model")
            });
        };
        let mut recipe: Self = serde_json::from_value(value.clone())
            .map_err(|e| format!("the stored recipe of run `{run_id}` cannot be read: {e}"))?;
        if let Some(provider) = args.provider {
            recipe.provider = provider;
        }
        if let Some(model) = &args.model {
            recipe.model.clone_from(model);
        }
        if let Some(path) = &args.config {
            recipe.config = load_config(path)?;
        }
        recipe.overlay(args)?;
        Ok(recipe)
    }

    /// The optional flags that replace parts of a recipe.
    fn overlay(&mut self, args: &ModelArgs) -> Result<(), String> {
        if let Some(url) = &args.base_url {
            self.base_url = Some(url.clone());
        }
        if let Some(dir) = &args.workdir {
            self.workdir = absolute(dir)?;
        }
        if args.no_stream {
            self.stream = false;
        }
        if !args.fallback_models.is_empty() {
            self.fallback_models.clone_from(&args.fallback_models);
        }
        if let Some(model) = &args.summary_model {
            self.summary_model = Some(model.clone());
        }
        Ok(())
    }

    /// The JSON stored with the run.
    pub fn to_json(&self) -> Result<serde_json::Value, String> {
        serde_json::to_value(self).map_err(|e| format!("cannot store the run's recipe: {e}"))
    }

    /// One client for `model` on this recipe's API and base URL, with the config's timeouts,
    /// behind model-call retries (`retry.model`).
    fn client(&self, model: &str) -> Result<Arc<dyn Provider>, String> {
        let client_config = match (self.provider, &self.base_url) {
            (ProviderKind::Openai, None) => ClientConfig::openai(model),
            (ProviderKind::Openai, Some(url)) => Ok(ClientConfig::openai_compatible(model, url)),
            (ProviderKind::Anthropic, None) => ClientConfig::anthropic(model),
            (ProviderKind::Anthropic, Some(url)) => {
                ClientConfig::anthropic(model).map(|c| c.with_base_url(url))
            }
        }
        .map_err(|e| {
            if e.key.ends_with("_API_KEY") {
                format!("{} is not set: export it, or point --base-url at a server that needs no key", e.key)
            } else {
                e.to_string()
            }
        })?;
        let client_config = self.config.provider.apply(client_config);
        let retry = self.config.retry.model.clone();
        Ok(match self.provider {
            ProviderKind::Openai => Arc::new(
                Retry::new(OpenAiClient::new(client_config).map_err(|e| e.to_string())?).with_config(retry),
            ),
            ProviderKind::Anthropic => Arc::new(
                Retry::new(AnthropicClient::new(client_config).map_err(|e| e.to_string())?)
                    .with_config(retry),
            ),
        })
    }

    /// The main model (behind its fallback chain, if any) and the summarizer.
    pub fn models(&self) -> Result<Models, String> {
        let main = self.client(&self.model)?;
        let main = if self.fallback_models.is_empty() {
            main
        } else {
            let mut chain = vec![main];
            for model in &self.fallback_models {
                chain.push(self.client(model)?);
            }
            Arc::new(FallbackChain::new(chain).with_events(printer()))
        };
        let summarizer = self.summary_model.as_deref().map(|model| self.client(model)).transpose()?;
        Ok(Models { main, summarizer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recipe_survives_the_store_and_flags_replace_its_parts() {
        let mut config = LooprailConfig::default();
        config.loop_.budget.max_turns = Some(7);
        config.guardrails.novelty_after = 3;
        let recipe = Recipe {
            provider: ProviderKind::Anthropic,
            model: "claude".into(),
            base_url: Some("http://127.0.0.1:9".into()),
            workdir: PathBuf::from("/tmp"),
            stream: false,
            fallback_models: vec!["b".into()],
            summary_model: None,
            config,
        };
        let stored = recipe.to_json().unwrap();
        assert!(!stored.to_string().contains("API_KEY"));
        let args = ModelArgs {
            provider: None,
            model: Some("claude-2".into()),
            base_url: None,
            config: None,
            store: "x.db".into(),
            workdir: None,
            no_stream: false,
            fallback_models: vec![],
            summary_model: None,
        };
        let back = Recipe::stored("r", Some(&stored), &args).unwrap();
        assert_eq!(Recipe { model: "claude".into(), ..back.clone() }, recipe, "only the model changed");
        assert_eq!(back.model, "claude-2");
        let missing = Recipe::stored("r", None, &ModelArgs { model: None, ..args }).unwrap_err();
        assert!(missing.contains("no stored recipe"), "{missing}");
    }
}
