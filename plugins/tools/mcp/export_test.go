package mcp

// RootsOf returns the URIs of the roots cfg offers.
func RootsOf(cfg *Config) ([]string, error) {
	roots, err := cfg.roots()
	var uris []string
	for _, r := range roots {
		uris = append(uris, r.URI)
	}
	return uris, err
}
