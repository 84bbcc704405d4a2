package openai

import "github.com/kgsync/kgsync/config"

// ConfigFrom maps the YAML embedder section (provider "openai") to a
// Config. A nil max_retries becomes DefaultMaxRetries; other zero values
// take New's defaults. Retry waits keep their defaults: they are not
// configurable in YAML.
func ConfigFrom(c config.Embedder) Config {
	retries := DefaultMaxRetries
	if c.MaxRetries != nil {
		retries = *c.MaxRetries
	}
	return Config{
		BaseURL:        c.BaseURL,
		Model:          c.Model,
		Dimensions:     c.Dimensions,
		APIKey:         c.APIKey,
		BatchSize:      c.BatchSize,
		MaxConcurrency: c.MaxConcurrency,
		Timeout:        c.Timeout,
		MaxRetries:     retries,
	}
}
