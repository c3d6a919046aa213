package oauth

import (
	"encoding/json"
	"net/http"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
)

// remarshal turns a decoded JSON object into a struct.
func remarshal(in map[string]any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Paths are the paths Handler answers at: WellKnown, and WellKnown with
// the resource's path after it (RFC 9728 section 3.1).
func (r *Resource) Paths() []string {
	p := r.metadataPath()
	if p == WellKnown {
		return []string{WellKnown}
	}
	return []string{WellKnown, p}
}

// Handler answers this server's RFC 9728 metadata, at WellKnown and at
// MetadataURL's path (the form with the resource's path after it), for
// GET and HEAD, without authentication.
func (r *Resource) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		doc := map[string]any{
			"resource":                 r.cfg.Resource,
			"authorization_servers":    []string{r.cfg.Issuer},
			"scopes_supported":         scopes.All,
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "mcp-sqlite-memory",
		}
		w.Header().Set("Content-Type", "application/json")
		// Public and the same for every caller: a short cache is fine.
		w.Header().Set("Cache-Control", "public, max-age=300")
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// Issuer is --oauth-issuer.
func (r *Resource) Issuer() string { return r.cfg.Issuer }

// ResourceURL is --resource.
func (r *Resource) ResourceURL() string { return r.cfg.Resource }
