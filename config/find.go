package config

// Find returns the config of the first enabled entry registered as name
// among entries, groups searched in order, depth first; nil and false
// when none is. A host reads another plugin's settings with it (the
// budget plugin's prices, to price a log's usage as the plugin does).
func Find(entries []Entry, name string) (any, bool) {
	for _, ent := range entries {
		if ent.Disabled {
			continue
		}
		if group, ok := ent.Config.([]Entry); ok {
			if c, ok := Find(group, name); ok {
				return c, true
			}
			continue
		}
		if ent.Name == name {
			return ent.Config, true
		}
	}
	return nil, false
}
