package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/privatefile"
)

// Registry is the file holding a person's servers, which a kernel keeps in
// its instance directory: JSON, mode 0600 (it holds the servers' secrets),
// replaced atomically on every change.
type Registry struct {
	Path string
	// LockPath is the file locked while the registry is changed, so two
	// processes adding or removing at once both keep their change; ""
	// is Path+".lock".
	LockPath string
}

// registryFile is the file's shape.
type registryFile struct {
	Servers []Server `json:"servers"`
}

// Load reads the servers, in the order they were added; a missing file is
// no servers. A file someone edited into a wrong shape (an unknown field,
// a malformed server, a name twice) is an error naming the file.
func (r Registry) Load() ([]Server, error) {
	data, err := privatefile.Read(r.Path) // it holds secrets: one others can read is refused, naming the chmod
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read mcp servers: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f registryFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("read mcp servers from %s: %v (fix the file, or remove it and add the servers again)", r.Path, err)
	}
	if err := checkAll(f.Servers); err != nil {
		// Not the caller's input: the file's, so no *InvalidError escapes.
		return nil, fmt.Errorf("read mcp servers from %s: %v", r.Path, err)
	}
	return f.Servers, nil
}

// List is the servers as they may be shown: no secret values.
func (r Registry) List() ([]Listing, error) {
	servers, err := r.Load()
	if err != nil {
		return nil, err
	}
	out := make([]Listing, len(servers))
	for i, s := range servers {
		out[i] = s.Listing()
	}
	return out, nil
}

// Add checks srv, refuses a name already taken (whatever its case),
// connects to the server and lists its tools (Probe), and only then
// stores it. It returns what the server offers. A malformed server or a
// taken name is an *InvalidError; a server that does not answer is an
// *UnreachableError, and is not stored. The file is read again under the
// lock once the server answered: another process may have changed it
// meanwhile (before, the slower of two adds wrote its list over the
// other's, and a server said to be added was lost).
func (r Registry) Add(ctx context.Context, srv Server, opts Options) (Offer, error) {
	if err := srv.Check(); err != nil {
		return Offer{}, err
	}
	servers, err := r.Load()
	if err != nil {
		return Offer{}, err
	}
	if err := r.free(servers, srv.Name); err != nil {
		return Offer{}, err
	}
	offer, err := Probe(ctx, srv, opts)
	if err != nil {
		return Offer{}, err
	}
	return offer, r.change(func(servers []Server) ([]Server, error) {
		if err := r.free(servers, srv.Name); err != nil {
			return nil, err
		}
		return append(servers, srv), nil
	})
}

// free is nil when no server of servers is named name, whatever its case.
func (r Registry) free(servers []Server, name string) error {
	if i := r.index(servers, name); i >= 0 {
		return &InvalidError{Server: name, Field: "name", Problem: fmt.Sprintf("a server named %q is added already; remove it first, or choose another name", servers[i].Name)}
	}
	return nil
}

// Remove deletes the server named name (whatever its case: names differ
// by more than case) and returns its name as stored; a name no server has
// is a *NotFoundError.
func (r Registry) Remove(name string) (string, error) {
	var stored string
	err := r.change(func(servers []Server) ([]Server, error) {
		i := r.index(servers, name)
		if i < 0 {
			return nil, &NotFoundError{Name: name}
		}
		stored = servers[i].Name
		return slices.Delete(servers, i, i+1), nil
	})
	return stored, err
}

// change reads the servers, applies edit and writes the result, holding
// the registry's lock throughout.
func (r Registry) change(edit func([]Server) ([]Server, error)) error {
	lockPath := r.LockPath
	if lockPath == "" {
		lockPath = r.Path + ".lock"
	}
	unlock, err := atomicfile.Lock(lockPath)
	if err != nil {
		return fmt.Errorf("mcp servers: %w", err)
	}
	defer unlock()
	servers, err := r.Load()
	if err != nil {
		return err
	}
	if servers, err = edit(servers); err != nil {
		return err
	}
	return r.save(servers)
}

func (Registry) index(servers []Server, name string) int {
	return slices.IndexFunc(servers, func(s Server) bool { return strings.EqualFold(s.Name, name) })
}

func (r Registry) save(servers []Server) error {
	data, err := json.MarshalIndent(registryFile{Servers: servers}, "", "  ")
	if err != nil {
		return fmt.Errorf("write mcp servers: %w", err)
	}
	if err := atomicfile.Write(r.Path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("mcp servers: %w", err) // atomicfile says "write PATH: …"
	}
	return nil
}
