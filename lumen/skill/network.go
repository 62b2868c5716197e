package skill

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/proc"
)

// ManifestFile is a skill's manifest, in its directory: what it needs
// beyond its own files, {"network": ["api.example.org:443"]} (or ["all"]).
const ManifestFile = "skill.json"

// allowFile records, in skills/, the network a person allowed each skill
// (lumen skills allow NAME --network). A skill cannot write it: it may
// write only its own directory.
const allowFile = ".network.json"

// Manifest is a skill's skill.json.
type Manifest struct {
	Network []string `json:"network,omitempty"`
}

// Allowance is what a person allowed a skill to reach, and when.
type Allowance struct {
	Network []string  `json:"network"`
	Allowed time.Time `json:"allowed"`
}

// Manifest reads name's skill.json; none is an empty manifest.
func (r *Runner) Manifest(name string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(r.Dir, name, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("skill %s: %s is not valid JSON: %w", name, ManifestFile, err)
	}
	if _, _, err := proc.NetworkPorts(m.Network); err != nil {
		return m, fmt.Errorf("skill %s: %s: %w", name, ManifestFile, err)
	}
	return m, nil
}

func (r *Runner) allowances() (map[string]Allowance, error) {
	all := map[string]Allowance{}
	data, err := os.ReadFile(filepath.Join(r.Dir, allowFile))
	if errors.Is(err, fs.ErrNotExist) {
		return all, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("%s: %w (it records what you allowed skills to reach: fix or remove it)", filepath.Join(r.Dir, allowFile), err)
	}
	return all, nil
}

// Network is what name declares it needs to reach, and what of that a
// person allowed: an entry allowed and declared since (a revision) is
// allowed only once allowed again.
func (r *Runner) Network(name string) (declared, allowed []string, err error) {
	m, err := r.Manifest(name)
	if err != nil {
		return nil, nil, err
	}
	all, err := r.allowances()
	if err != nil {
		return nil, nil, err
	}
	for _, e := range m.Network {
		if slices.Contains(all[name].Network, e) {
			allowed = append(allowed, e)
		}
	}
	return m.Network, allowed, nil
}

// AllowNetwork records that the person allows name to reach what it
// declares, and returns it.
func (r *Runner) AllowNetwork(name string) ([]string, error) {
	if r.ReadOnly {
		return nil, errors.New("skills: the instance is open read-only")
	}
	if !r.Available(name) {
		return nil, fmt.Errorf("skill %q: no %s (skills: %s)", name, filepath.Join(r.Dir, name, "main.py"), r.names())
	}
	m, err := r.Manifest(name)
	if err != nil {
		return nil, err
	}
	if len(m.Network) == 0 {
		return nil, fmt.Errorf("skill %s declares no network need (%s with {\"network\": [\"host:port\"]}), so there is nothing to allow", name, filepath.Join(r.Dir, name, ManifestFile))
	}
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	all, err := r.allowances()
	if err != nil {
		return nil, err
	}
	all[name] = Allowance{Network: m.Network, Allowed: time.Now().UTC()}
	data, _ := json.MarshalIndent(all, "", "  ") // plain data always marshals
	if err := atomicfile.Write(filepath.Join(r.Dir, allowFile), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return m.Network, nil
}

// NetworkLine says, for a listing, what a skill declares and was allowed;
// "" when it declares nothing.
func NetworkLine(name string, declared, allowed []string) string {
	switch {
	case len(declared) == 0:
		return ""
	case len(allowed) == len(declared):
		return "network allowed: " + strings.Join(allowed, ", ")
	case len(allowed) > 0:
		return "network allowed: " + strings.Join(allowed, ", ") + "; declared, not allowed: " + strings.Join(declared, ", ") + " (lumen skills allow " + name + " --network)"
	}
	return "network declared, not allowed: " + strings.Join(declared, ", ") + " (lumen skills allow " + name + " --network)"
}
