package web

import (
	"embed"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"path"
)

// assets holds the host page, its script and the React bundle that
// `make build` generates (assets/react.js, not committed).
//
//go:embed assets/*.html assets/*.js
var assets embed.FS

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	s.serveFile(w, "index.html")
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	s.serveFile(w, r.PathValue("file"))
}

func (s *Server) serveFile(w http.ResponseWriter, name string) {
	data, err := assets.ReadFile("assets/" + name)
	if errors.Is(err, fs.ErrNotExist) {
		if name == "react.js" {
			http.Error(w, "React bundle not built: run make build", http.StatusInternalServerError)
			return
		}
		http.NotFound(w, nil)
		return
	}
	if err != nil {
		http.NotFound(w, nil)
		return
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(data)
}
