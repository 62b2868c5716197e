// Package network is the instance on the network: its key, its beach,
// and what it publishes, reads, sends and receives there, each statement
// signed and everything read verified (docs/hermitcrab-network.md).
package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/pscale"
)

// The LLM's network tools, the CLI and the wake triggers call the same
// operations. Every statement is signed with the instance's key
// (identity.key in the data directory) and everything read from a beach
// is verified by beach.Client; what this instance received is kept in its
// store, so a message is never lost between the beach marking it read and
// the LLM seeing it, and never accepted twice.

// DefaultBeach is the beach an instance uses when none is named: one
// served on this machine with the defaults (hermitcrab beach serve).
const DefaultBeach = "http://127.0.0.1:8421"

// beachSetting keeps the beach named with `hermitcrab beach use URL`.
const beachSetting = "beach"

// Agent is the instance on the network, its identity and beach client
// made when first needed.
type Agent struct {
	dir    string
	store  *store.Store
	blocks *blocks.Blocks
	opts   Options

	mu     sync.Mutex
	id     *identity.Identity
	client *beach.Client
	url    string
	// fetching makes this process's inbox fetches one at a time: two at
	// once (a trigger's poll beside a wake's inbox_check) would fetch the
	// same messages, and the second would take them for replays.
	fetching sync.Mutex
}

// Options configure an Agent.
type Options struct {
	// Beach is the beach URL for this run (a command's choice, or
	// $HERMITCRAB_BEACH); empty: the data directory's setting (SetBeach),
	// else DefaultBeach.
	Beach string
}

// New is the Agent of the instance in dir, whose store and blocks are st
// and b.
func New(dir string, st *store.Store, b *blocks.Blocks, o Options) *Agent {
	return &Agent{dir: dir, store: st, blocks: b, opts: o}
}

// Identity is the instance's key, made (identity.key, 0600) on first use.
func (k *Agent) Identity() (*identity.Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.id == nil {
		id, err := identity.Load(k.dir)
		if err != nil {
			return nil, err
		}
		k.id = id
	}
	return k.id, nil
}

// ID is the instance's agent id and the file of the key it signs with:
// what `hermitcrab beach id --json` prints.
type ID struct {
	Agent   string `json:"agent"`    // "hc…"
	KeyFile string `json:"key_file"` // identity.key in the data directory
}

// ID is the instance's agent id, its key made (identity.key, 0600) on
// first use.
func (k *Agent) ID() (ID, error) {
	id, err := k.Identity()
	if err != nil {
		return ID{}, err
	}
	return ID{Agent: id.Agent(), KeyFile: filepath.Join(k.dir, identity.KeyFile)}, nil
}

// Sign signs body (a JSON object) as an envelope of kind with the
// instance's key, for an MCP client that does not hold the key to relay;
// one a beach would refuse is an error.
func (k *Agent) Sign(kind string, body json.RawMessage) (*identity.Envelope, error) {
	id, err := k.Identity()
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, option.Errorf("body", "%q is not JSON", body)
	}
	e, err := id.Sign(kind, body, time.Now())
	if err != nil {
		return nil, err
	}
	if err := beach.Check(e); err != nil {
		return nil, fmt.Errorf("a beach would refuse this envelope: %w", err)
	}
	return e, nil
}

// BeachInUse is the beach the instance talks to: what `hermitcrab beach
// use --json` prints.
type BeachInUse struct {
	Beach string `json:"beach"`
}

// BeachURL is the beach this instance talks to: Options.Beach, else the one set in the data directory (SetBeach),
// else DefaultBeach.
func (k *Agent) BeachURL(ctx context.Context) (string, error) {
	if k.opts.Beach != "" {
		return k.opts.Beach, nil
	}
	u, ok, err := k.store.Setting(ctx, beachSetting)
	if err != nil {
		return "", err
	}
	if ok && u != "" {
		return u, nil
	}
	return DefaultBeach, nil
}

// CheckBeachURL refuses a beach URL that is not http(s)://host[:port].
func CheckBeachURL(u string) error {
	_, err := beach.ParseURL(u)
	return err
}

// SetBeach names the beach this instance uses from now on (kept in the
// data directory); "" goes back to the default.
func (k *Agent) SetBeach(ctx context.Context, rawURL string) error {
	if rawURL != "" {
		if _, err := beach.ParseURL(rawURL); err != nil {
			return err
		}
	}
	return k.store.SetSetting(ctx, beachSetting, strings.TrimRight(rawURL, "/"))
}

// Client is the client of the instance's beach, signing with its key and
// checking replays against the messages it has stored.
func (k *Agent) Client(ctx context.Context) (*beach.Client, error) {
	u, err := k.BeachURL(ctx)
	if err != nil {
		return nil, err
	}
	id, err := k.Identity()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.client == nil || k.url != u {
		c, err := beach.NewClient(u, id)
		if err != nil {
			return nil, err
		}
		c.Nonces = storeNonces{k.store} // signing keeps the real clock: a beach checks it against its own
		k.client, k.url = c, u
	}
	return k.client, nil
}

// storeNonces is the instance's replay memory: the messages it stored. A
// message is recorded with its content (AddReceived), in one transaction,
// so an answer lost between the beach and the store can be fetched again
// (the beach's after) without a nonce recorded for a message never kept.
type storeNonces struct{ st *store.Store }

func (n storeNonces) Use(ctx context.Context, agent, nonce string, _ time.Time) (bool, error) {
	known, err := n.st.KnownMessage(ctx, agent, nonce)
	return !known, err
}

// PassportSpec is what the instance publishes about itself. Offers and
// needs are pscale coordinates into its own blocks ("purpose 0.2").
type PassportSpec struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Offers      []string `json:"offers,omitempty"`
	Needs       []string `json:"needs,omitempty"`
}

// PublishPassport signs and publishes the instance's passport. Each offer
// and need must name a node of its own blocks ("block address"); it is
// published with that node's text, "purpose 0.2: learn to garden", cut to
// the beach's 200 characters, so a reader sees what it means without the
// blocks.
func (k *Agent) PublishPassport(ctx context.Context, spec PassportSpec) (*beach.Ack, beach.Passport, error) {
	p := beach.Passport{Name: strings.TrimSpace(spec.Name), Description: spec.Description}
	if p.Name == "" {
		return nil, p, errors.New("name is required: what other instances call you")
	}
	for field, list := range map[string][]string{"offers": spec.Offers, "needs": spec.Needs} {
		var out []string
		for _, c := range list {
			text, err := k.coordinate(ctx, c)
			if err != nil {
				return nil, p, fmt.Errorf("%s %q: %w", field, c, err)
			}
			out = append(out, clip.Text(text, beach.MaxCoordinate-1))
		}
		if field == "offers" {
			p.Offers = out
		} else {
			p.Needs = out
		}
	}
	c, err := k.Client(ctx)
	if err != nil {
		return nil, p, err
	}
	ack, err := c.PublishPassport(ctx, p)
	return ack, p, err
}

// coordinate reads "block address" in the instance's own blocks and
// renders it "block address: text".
func (k *Agent) coordinate(ctx context.Context, c string) (string, error) {
	name, addr, err := splitCoordinate(c)
	if err != nil {
		return "", err
	}
	at, err := blocks.ParseAddress("path", addr)
	if err != nil {
		return "", err
	}
	view, err := k.blocks.ReadNode(ctx, name, at)
	if err != nil {
		return "", err
	}
	return name + " " + addr + ": " + strings.TrimSpace(view.Content), nil
}

// splitCoordinate reads "BLOCK ADDRESS".
func splitCoordinate(c string) (name, addr string, err error) {
	name, addr, ok := strings.Cut(strings.TrimSpace(c), " ")
	addr = strings.TrimSpace(addr)
	if !ok || addr == "" {
		return "", "", errors.New(`want "BLOCK ADDRESS", a node of your own blocks such as "purpose 0.2"`)
	}
	return name, addr, nil
}

// spindle renders "block address" as the chain of texts from the block's
// root to that node: "purpose 0.23: root › 0.2's text › 0.23's text", cut
// to the beach's 500 characters.
func (k *Agent) spindle(ctx context.Context, c string) (string, error) {
	name, addr, err := splitCoordinate(c)
	if err != nil {
		return "", err
	}
	q, err := pscale.ParseQuery(string(pscale.ModeSpindle), addr, nil)
	if err != nil {
		return "", err
	}
	r, err := k.blocks.BSP(ctx, name, q)
	if err != nil {
		return "", err
	}
	texts := make([]string, 0, len(r.Nodes))
	for _, s := range r.Nodes {
		texts = append(texts, clip.Line(s.Text, 200))
	}
	return clip.Text(name+" "+addr+": "+strings.Join(texts, " › "), beach.MaxSpindle-1), nil
}

// Passport reads and verifies another agent's passport.
func (k *Agent) Passport(ctx context.Context, agent string) (*beach.Verified[beach.Passport], error) {
	c, err := k.Client(ctx)
	if err != nil {
		return nil, err
	}
	return c.Passport(ctx, strings.TrimSpace(agent))
}

// Passports lists the passports published most recently, verified.
func (k *Agent) Passports(ctx context.Context, limit int) ([]beach.Verified[beach.Passport], []beach.Refused, error) {
	c, err := k.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.Passports(ctx, limit)
}

// Mark signs and leaves a mark on a URL: this instance was there, for
// purpose. Only the URL's hash is sent.
func (k *Agent) Mark(ctx context.Context, rawURL, purpose string) (*Marked, error) {
	if u, err := url.Parse(strings.TrimSpace(rawURL)); err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("url %q: want an absolute URL", rawURL)
	}
	c, err := k.Client(ctx)
	if err != nil {
		return nil, err
	}
	ack, err := c.Mark(ctx, rawURL, purpose)
	if err != nil {
		return nil, err
	}
	return &Marked{URLHash: beach.URLHash(rawURL), Agent: ack.Agent}, nil
}

// Marked is a mark the instance left: the URL's hash (all the beach
// learns of the URL) and the agent that signed it.
type Marked struct {
	URLHash string `json:"url_hash"`
	Agent   string `json:"agent"`
}

// Marks lists who marked a URL and why, newest first, verified.
func (k *Agent) Marks(ctx context.Context, rawURL string, limit int) ([]beach.Verified[beach.Mark], []beach.Refused, error) {
	c, err := k.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.Marks(ctx, rawURL, limit)
}

// Outgoing is a message the instance sends.
type Outgoing struct {
	To      string `json:"to,omitempty"`
	Type    string `json:"type,omitempty"` // grain_probe, grain_response, general
	Content string `json:"content"`
	// Spindle is "block address" in the instance's own blocks; the
	// message carries that spindle's texts.
	Spindle string `json:"spindle,omitempty"`
	// ReplyTo is this instance's id of a message it received: the answer
	// goes to its sender, responding to it (a grain probe is answered with
	// a grain response unless Type says otherwise).
	ReplyTo int64 `json:"reply_to,omitempty"`
	// RespondingTo is the nonce of the message this one answers, given
	// as it is (the command line gives it; the LLM gives ReplyTo, and
	// never copies a nonce).
	RespondingTo string `json:"-"`
}

// SendMessage signs and sends a message. A type other than the three is
// refused before anything is read or sent.
func (k *Agent) SendMessage(ctx context.Context, o Outgoing) (*beach.Ack, beach.Message, error) {
	m := beach.Message{To: strings.TrimSpace(o.To), Type: o.Type, Content: o.Content, RespondingTo: o.RespondingTo}
	if m.Type != "" {
		if err := beach.CheckType(m.Type); err != nil {
			// An option error of "type" (beach.CheckType's message names it).
			return nil, m, &option.Error{Field: "type", Problem: strings.TrimPrefix(err.Error(), "type "), Err: err}
		}
	}
	if o.ReplyTo != 0 {
		orig, err := k.store.ReceivedMessage(ctx, o.ReplyTo)
		if err != nil {
			return nil, m, err
		}
		var body beach.Message
		if err := json.Unmarshal(orig.Message, &body); err != nil {
			return nil, m, fmt.Errorf("message %d is damaged: %w", o.ReplyTo, err)
		}
		if m.To != "" && m.To != orig.Sender {
			return nil, m, fmt.Errorf("reply_to %d came from %s, not %s: leave to out to answer its sender", o.ReplyTo, orig.Sender, m.To)
		}
		m.To, m.RespondingTo = orig.Sender, orig.Nonce
		if m.Type == "" && body.Type == beach.TypeGrainProbe {
			m.Type = beach.TypeGrainResponse
		}
	}
	if m.To == "" {
		return nil, m, errors.New("to is required (an agent id, hc…), or reply_to (a message you received)")
	}
	if m.Type == "" {
		m.Type = beach.TypeGeneral
	}
	if o.Spindle != "" {
		s, err := k.spindle(ctx, o.Spindle)
		if err != nil {
			return nil, m, fmt.Errorf("spindle %q: %w", o.Spindle, err)
		}
		m.Spindle = s
	}
	c, err := k.Client(ctx)
	if err != nil {
		return nil, m, err
	}
	ack, err := c.Send(ctx, m)
	return ack, m, err
}

// InboxMessage is a received message as the LLM and the page see it.
type InboxMessage struct {
	ID           int64  `json:"id"` // this instance's number: reply_to takes it
	From         string `json:"from"`
	Type         string `json:"type"`
	Content      string `json:"content"`
	Spindle      string `json:"spindle,omitempty"`
	RespondingTo string `json:"responding_to,omitempty"`
	Signed       string `json:"signed"`
	Nonce        string `json:"nonce"`
}

func inboxMessage(r store.Received) InboxMessage {
	var m beach.Message
	_ = json.Unmarshal(r.Message, &m) // stored verified: it decodes
	return InboxMessage{ID: r.ID, From: r.Sender, Type: m.Type, Content: m.Content, Spindle: m.Spindle, RespondingTo: m.RespondingTo,
		Signed: r.Signed.UTC().Format(time.RFC3339), Nonce: r.Nonce}
}

// Inbox is what FetchInbox brought in.
type Inbox struct {
	New     []InboxMessage  `json:"new"`
	Refused []beach.Refused `json:"refused,omitempty"`
	// Waiting is how many messages the model has not been given yet
	// (FetchInbox only): a wake or inbox_check gives them to it.
	Waiting int `json:"-"`
}

// inboxPages bounds one fetch: 10 pages of 100 messages.
const inboxPages = 10

// MaxWaiting bounds the messages kept waiting for a wake (or inbox_check)
// to deliver them: past it, the next stay unread on the beach until
// these are delivered, so a flood (keys cost nothing) fills the beach's
// inbox, not this instance's store.
const MaxWaiting = 200

// FetchOptions tune FetchInbox; the zero value is what the inbox trigger
// and inbox_check fetch.
type FetchOptions struct {
	// After, when set, starts the fetch above this beach message id, read
	// or not, instead of above the newest one the instance stored (what
	// the instance has already is refused as a replay).
	After *int64
	// Limit is the most messages taken; 0 is as many as room is left for.
	Limit int
}

// FetchInbox takes the messages the beach holds for this instance that it
// has not stored yet (those above the last beach id it stored, read or
// not, so one whose answer was lost on the way comes again), verifies
// each (signature, addressee, not seen before) and stores the good ones,
// where they wait for the model: the next wake of an inbox trigger, or
// inbox_check, gives them to it. Then it takes any message still unread:
// one at or below that id can only be there when the beach's ids started
// again (a new database at the same address). It returns the messages
// stored; what did not verify is returned with the reason. With
// MaxWaiting messages undelivered it fetches nothing, and never more than
// makes them MaxWaiting.
func (k *Agent) FetchInbox(ctx context.Context, o FetchOptions) (*Inbox, error) {
	k.fetching.Lock()
	defer k.fetching.Unlock()
	c, err := k.Client(ctx)
	if err != nil {
		return nil, err
	}
	host := beachHost(c.URL())
	out := &Inbox{New: []InboxMessage{}}
	waiting, err := k.store.CountWaiting(ctx)
	if err != nil {
		return out, err
	}
	defer func() { out.Waiting = waiting + len(out.New) }()
	room := MaxWaiting - waiting
	if o.Limit > 0 {
		room = min(room, o.Limit)
	}
	if room <= 0 {
		return out, nil
	}
	after, err := k.inboxAfter(ctx, host)
	if err != nil {
		return out, err
	}
	if o.After != nil {
		after = *o.After
	}
	for range inboxPages {
		good, bad, err := c.InboxAfter(ctx, after, min(100, room))
		if err != nil {
			return out, err
		}
		if err := k.keep(ctx, host, good, bad, out); err != nil {
			return out, err
		}
		// Refused entries are not fetched again: the next fetch starts
		// above the highest id this one saw (stored after the good ones,
		// so a crash between the two fetches them again, as replays).
		top := after
		for _, v := range good {
			top = max(top, v.ID)
		}
		for _, r := range bad {
			top = max(top, r.ID)
		}
		if err := k.fetchedTo(ctx, host, top); err != nil {
			return out, err
		}
		if room -= len(good); room <= 0 {
			return out, nil
		}
		if len(good)+len(bad) < 100 || top == after {
			break
		}
		after = top
	}
	good, bad, err := c.Inbox(ctx, min(100, room))
	if err != nil {
		return out, err
	}
	return out, k.keep(ctx, host, good, bad, out)
}

// keep stores the verified messages of one answer and adds them, and the
// entries refused, to out.
func (k *Agent) keep(ctx context.Context, host string, good []beach.Verified[beach.Message], bad []beach.Refused, out *Inbox) error {
	out.Refused = append(out.Refused, bad...)
	now := time.Now()
	recs := make([]store.Received, 0, len(good))
	for _, v := range good {
		body, err := json.Marshal(v.Body)
		if err != nil {
			return err
		}
		env, err := json.Marshal(v.Envelope)
		if err != nil {
			return err
		}
		recs = append(recs, store.Received{Beach: host, BeachID: v.ID, Sender: v.Agent, Nonce: v.Envelope.Nonce, Signed: v.Time, Received: now, Message: body, Envelope: env})
	}
	added, replays, err := k.store.AddReceived(ctx, recs)
	if err != nil {
		return err
	}
	for _, r := range added {
		out.New = append(out.New, inboxMessage(r))
	}
	for _, r := range replays {
		out.Refused = append(out.Refused, beach.Refused{ID: r.BeachID, Agent: r.Sender, Reason: identity.ReasonReplay, Detail: "this message (its sender and nonce) was already received: a replay"})
	}
	return nil
}

// inboxAfterSetting, followed by a beach's host, keeps the highest
// message id fetched from it.
const inboxAfterSetting = "inbox_after "

// inboxAfter is the beach id the next fetch starts above: the highest it
// fetched, or stored.
func (k *Agent) inboxAfter(ctx context.Context, host string) (int64, error) {
	after, err := k.store.LastBeachID(ctx, host)
	if err != nil {
		return 0, err
	}
	if v, ok, err := k.store.Setting(ctx, inboxAfterSetting+host); err != nil {
		return 0, err
	} else if ok {
		var n int64
		if _, err := fmt.Sscan(v, &n); err == nil {
			after = max(after, n)
		}
	}
	return after, nil
}

// fetchedTo records that the fetches from host have seen every id up to
// top; it never moves the mark back (a fetch from an earlier id, After).
func (k *Agent) fetchedTo(ctx context.Context, host string, top int64) error {
	was, err := k.inboxAfter(ctx, host)
	if err != nil || top <= was {
		return err
	}
	return k.store.SetSetting(ctx, inboxAfterSetting+host, fmt.Sprint(top))
}

func beachHost(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Host
	}
	return u
}

// CheckInbox is the LLM's inbox_check: it fetches new messages, then
// returns every message not yet shown to the LLM and marks them shown.
// With all, it returns the last 20 messages received instead.
func (k *Agent) CheckInbox(ctx context.Context, all bool) (*Inbox, error) {
	fetched, err := k.FetchInbox(ctx, FetchOptions{})
	if err != nil {
		return nil, err
	}
	recs, err := k.store.ReceivedMessages(ctx, !all, 20)
	if err != nil {
		return nil, err
	}
	out := &Inbox{New: []InboxMessage{}, Refused: fetched.Refused}
	var ids []int64
	for _, r := range recs {
		out.New = append(out.New, inboxMessage(r))
		ids = append(ids, r.ID)
	}
	return out, k.store.MarkDelivered(ctx, ids)
}

// Waiting lists the messages the model has not been given yet, oldest
// first, at most limit: what the next inbox wake carries.
func (k *Agent) Waiting(ctx context.Context, limit int) ([]InboxMessage, error) {
	return k.stored(ctx, true, limit)
}

// Received lists the newest messages received, at most limit, oldest
// first: delivered to the model or not.
func (k *Agent) Received(ctx context.Context, limit int) ([]InboxMessage, error) {
	return k.stored(ctx, false, limit)
}

// stored lists stored messages as store.ReceivedMessages picks them.
func (k *Agent) stored(ctx context.Context, waiting bool, limit int) ([]InboxMessage, error) {
	recs, err := k.store.ReceivedMessages(ctx, waiting, limit)
	if err != nil {
		return nil, err
	}
	out := make([]InboxMessage, 0, len(recs))
	for _, r := range recs {
		out = append(out, inboxMessage(r))
	}
	return out, nil
}

// SaveToBeach leaves an encrypted, signed save point of every block with
// the beach (beach.Seal), replacing the one before. It returns the size of
// the export sealed.
func (k *Agent) SaveToBeach(ctx context.Context) (*beach.Ack, int, error) {
	data, err := k.blocks.Export(ctx)
	if err != nil {
		return nil, 0, err
	}
	c, err := k.Client(ctx)
	if err != nil {
		return nil, 0, err
	}
	ack, err := c.Save(ctx, data)
	return ack, len(data), err
}

// RestoreFromBeach fetches the instance's save point, checks that its own
// key signed it, opens it and imports its blocks (keeping existing blocks
// unless replace).
func (k *Agent) RestoreFromBeach(ctx context.Context, replace bool) (*blocks.ImportResult, *beach.Verified[beach.SavePoint], error) {
	c, err := k.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	data, v, err := c.Restore(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err := k.blocks.Import(ctx, []blocks.ImportSource{{Name: "savepoint.json", Data: data}}, replace)
	return res, v, err
}
