package hermitcrab

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach/server"
	bstore "github.com/llmkernels/kernels/hermitcrab/beach/store"
	"github.com/llmkernels/kernels/hermitcrab/endpoint"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/hermitcrab/web"
	"github.com/llmkernels/kernels/internal/option"
)

// The servers a command runs: the web shell (Serve), the instance's own
// endpoints alone (ServeEndpoints: webhooks and MCP), and a beach
// (ServeBeach). Each serves until its context ends.

// ServeOptions configure the web shell (web.Config): the data directory,
// the kernel's options, the address and who may reach it, and the LLM
// client made once the API key is known.
type ServeOptions = web.Config

// Serve opens the instance in o.DataDir and serves its web shell until ctx
// ends; ready is told the URL to open and the kernel it serves.
func Serve(ctx context.Context, o ServeOptions, ready func(url string, k *Kernel)) error {
	if err := checkAddr(o.Addr); err != nil {
		return err
	}
	srv, err := web.New(ctx, o)
	if err != nil {
		return err
	}
	err = srv.ListenAndServe(ctx, func(url string) {
		if ready != nil {
			ready(url, srv.Kernel())
		}
	})
	return errors.Join(err, srv.Close())
}

// EndpointOptions configure ServeEndpoints.
type EndpointOptions struct {
	Addr string
	// AllowHosts are further Host names the endpoints answer to.
	AllowHosts []string
	// MCP turns on the MCP endpoint over the blocks at /mcp.
	MCP bool
	Log *slog.Logger
}

// ServeEndpoints serves k's webhooks (/hooks/NAME) and, with o.MCP, its MCP
// endpoint, alone, until ctx ends; ready is told their base URL once they
// listen.
func ServeEndpoints(ctx context.Context, k *Kernel, o EndpointOptions, ready func(url string)) error {
	if err := checkAddr(o.Addr); err != nil {
		return err
	}
	h, err := endpoint.New(k, o.MCP, o.Log)
	if err != nil {
		return err
	}
	srv := &endpoint.Server{Addr: o.Addr, AllowHosts: o.AllowHosts, Handler: h}
	return srv.ListenAndServe(ctx, ready)
}

// Defaults of BeachOptions' zero values (see beach/server).
const (
	DefaultBeachWindow        = server.DefaultWindow
	DefaultBeachAgentPerMin   = server.DefaultAgentPerMin
	DefaultBeachAgentBurst    = server.DefaultAgentBurst
	DefaultBeachAddrPerMin    = server.DefaultAddrPerMin
	DefaultBeachAddrBurst     = server.DefaultAddrBurst
	DefaultBeachMaxBody       = server.DefaultMaxBody
	DefaultBeachSavePointBody = server.DefaultSavePointBody
)

// BeachOptions configure a beach: its database, where it listens, and its
// limits (a negative rate is no limit).
type BeachOptions struct {
	// DB is a SQLite file or a postgres:// URL.
	DB               string
	Addr             string
	AllowHosts       []string
	Window           time.Duration
	AgentPerMinute   float64
	AgentBurst       int
	AddrPerMinute    float64
	AddrBurst        int
	MaxBody          int64
	MaxSavePointBody int64
	Log              *slog.Logger
}

// Check refuses limits that mean nothing, which the beach would otherwise
// take for its defaults: a window, burst or body size at or below 0, a
// rate of 0 or not a number (-1 is "no limit"). Its error is an
// OptionError naming the field.
func (o BeachOptions) Check() error {
	if err := checkAddr(o.Addr); err != nil {
		return err
	}
	switch {
	case o.Window <= 0:
		return option.Errorf("window", "%s: give how far a signed time may be from this clock, e.g. 5m", o.Window)
	case o.AgentBurst <= 0:
		return option.Errorf("agent_burst", "%d: give a burst of at least 1 request", o.AgentBurst)
	case o.AddrBurst <= 0:
		return option.Errorf("addr_burst", "%d: give a burst of at least 1 request", o.AddrBurst)
	case o.MaxBody <= 0:
		return option.Errorf("max_body", "%d: give a size in bytes above 0", o.MaxBody)
	case o.MaxSavePointBody <= 0:
		return option.Errorf("max_savepoint_body", "%d: give a size in bytes above 0", o.MaxSavePointBody)
	}
	for _, r := range []struct {
		field string
		rate  float64
	}{{"agent_rate", o.AgentPerMinute}, {"addr_rate", o.AddrPerMinute}} {
		if r.rate == 0 || math.IsNaN(r.rate) {
			return option.Errorf(r.field, "%v: give requests a minute, or -1 for no limit", r.rate)
		}
	}
	return nil
}

// checkAddr refuses an address no listener can take (no port, a port
// outside 0-65535), before anything is opened: an OptionError on addr. An
// address that is well formed but taken fails later, when it is listened
// on.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return option.Errorf("addr", "%q: give host:port with a port from 0 to 65535, e.g. 127.0.0.1:8420 (:0 picks a free port)", addr)
	}
	return nil
}

// BeachInfo says where a beach serves: its URL, its database's dialect
// and the database with no password in it.
type BeachInfo struct {
	URL      string `json:"url"`
	Dialect  string `json:"dialect"`  // sqlite or postgres
	Database string `json:"database"` // with no password in it
}

// ServeBeach opens (creating) the beach's database and serves it until ctx
// ends; ready is told where once it listens.
func ServeBeach(ctx context.Context, o BeachOptions, ready func(BeachInfo)) error {
	if err := o.Check(); err != nil {
		return err
	}
	st, err := bstore.Open(ctx, o.DB)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{Store: st, Addr: o.Addr, AllowHosts: o.AllowHosts, Window: o.Window,
		AgentPerMinute: o.AgentPerMinute, AgentBurst: o.AgentBurst, AddrPerMinute: o.AddrPerMinute, AddrBurst: o.AddrBurst,
		MaxBody: o.MaxBody, MaxSavePointBody: o.MaxSavePointBody, Log: o.Log})
	if err != nil {
		return errors.Join(err, st.Close())
	}
	err = srv.ListenAndServe(ctx, func(u string) {
		if ready != nil {
			ready(BeachInfo{URL: u, Dialect: st.Dialect(), Database: bstore.Redact(o.DB)})
		}
	})
	return errors.Join(err, st.Close())
}

// CheckBeachURL refuses a beach URL that is not http(s)://host[:port].
func CheckBeachURL(u string) error { return network.CheckBeachURL(u) }
