package web

import (
	"embed"
	"mime"
	"net/http"
	"path"
)

// assets holds the host page, its script and the React bundle. The bundle
// (assets/react.js, built by assets/gen.go from package-lock.json) is
// committed and named on its own below, so a build without it fails instead
// of serving a page that cannot run.
//
//go:embed assets/*.html assets/*.js assets/react.js
var assets embed.FS

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	s.serveFile(w, "index.html")
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	s.serveFile(w, r.PathValue("file"))
}

func (s *Server) serveFile(w http.ResponseWriter, name string) {
	data, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, nil)
		return
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(data) // a failed write means the browser has gone; no one is left to tell
}
