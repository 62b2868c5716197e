package hermitcrab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/pscale"
)

// The instance on the network (docs/hermitcrab-network.md): its key, its
// beach, and the kernel operations the LLM's network tools, the CLI and
// the wake triggers call. Every statement is signed with the instance's
// key (identity.key in the data directory) and everything read from a
// beach is verified by beach.Client; what this instance received is kept
// in its store, so a message is never lost between the beach marking it
// read and the LLM seeing it, and never accepted twice.

// DefaultBeach is the beach an instance uses when none is named: one
// served on this machine with the defaults (hermitcrab beach serve).
const DefaultBeach = "http://127.0.0.1:8421"

// beachSetting keeps the beach named with `hermitcrab beach use URL`.
const beachSetting = "beach"

// network is the kernel's lazily made identity and beach client.
type network struct {
	mu     sync.Mutex
	id     *identity.Identity
	client *beach.Client
	url    string
	// fetching makes this process's inbox fetches one at a time: two at
	// once (a trigger's poll beside a wake's inbox_check) would fetch the
	// same messages, and the second would take them for replays.
	fetching sync.Mutex
}

// Identity is the instance's key, made (identity.key, 0600) on first use.
func (k *Kernel) Identity() (*identity.Identity, error) {
	k.net.mu.Lock()
	defer k.net.mu.Unlock()
	if k.net.id == nil {
		id, err := identity.Load(k.dir)
		if err != nil {
			return nil, err
		}
		k.net.id = id
	}
	return k.net.id, nil
}

// BeachURL is the beach this instance talks to: Options.Beach (--beach or
// $HERMITCRAB_BEACH), else the one set in the data directory (SetBeach),
// else DefaultBeach.
func (k *Kernel) BeachURL(ctx context.Context) (string, error) {
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

// SetBeach names the beach this instance uses from now on (kept in the
// data directory); "" goes back to the default.
func (k *Kernel) SetBeach(ctx context.Context, rawURL string) error {
	if rawURL != "" {
		if _, err := beach.ParseURL(rawURL); err != nil {
			return err
		}
	}
	return k.store.SetSetting(ctx, beachSetting, strings.TrimRight(rawURL, "/"))
}

// Beach is the client of the instance's beach, signing with its key and
// checking replays against the messages it has stored.
func (k *Kernel) Beach(ctx context.Context) (*beach.Client, error) {
	u, err := k.BeachURL(ctx)
	if err != nil {
		return nil, err
	}
	id, err := k.Identity()
	if err != nil {
		return nil, err
	}
	k.net.mu.Lock()
	defer k.net.mu.Unlock()
	if k.net.client == nil || k.net.url != u {
		c, err := beach.NewClient(u, id)
		if err != nil {
			return nil, err
		}
		c.Nonces = storeNonces{k.store} // signing keeps the real clock: a beach checks it against its own
		k.net.client, k.net.url = c, u
	}
	return k.net.client, nil
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
func (k *Kernel) PublishPassport(ctx context.Context, spec PassportSpec) (*beach.Ack, beach.Passport, error) {
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
	c, err := k.Beach(ctx)
	if err != nil {
		return nil, p, err
	}
	ack, err := c.PublishPassport(ctx, p)
	return ack, p, err
}

// coordinate reads "block address" in the instance's own blocks and
// renders it "block address: text".
func (k *Kernel) coordinate(ctx context.Context, c string) (string, error) {
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
func (k *Kernel) spindle(ctx context.Context, c string) (string, error) {
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
func (k *Kernel) Passport(ctx context.Context, agent string) (*beach.Verified[beach.Passport], error) {
	c, err := k.Beach(ctx)
	if err != nil {
		return nil, err
	}
	return c.Passport(ctx, strings.TrimSpace(agent))
}

// Passports lists the passports published most recently, verified.
func (k *Kernel) Passports(ctx context.Context, limit int) ([]beach.Verified[beach.Passport], []beach.Refused, error) {
	c, err := k.Beach(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.Passports(ctx, limit)
}

// Mark signs and leaves a mark on a URL: this instance was there, for
// purpose. Only the URL's hash is sent.
func (k *Kernel) Mark(ctx context.Context, rawURL, purpose string) (*beach.Ack, error) {
	if u, err := url.Parse(strings.TrimSpace(rawURL)); err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("url %q: want an absolute URL", rawURL)
	}
	c, err := k.Beach(ctx)
	if err != nil {
		return nil, err
	}
	return c.Mark(ctx, rawURL, purpose)
}

// Marks lists who marked a URL and why, newest first, verified.
func (k *Kernel) Marks(ctx context.Context, rawURL string, limit int) ([]beach.Verified[beach.Mark], []beach.Refused, error) {
	c, err := k.Beach(ctx)
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
	// as it is (the command line's --responding-to; the LLM gives
	// ReplyTo, and never copies a nonce).
	RespondingTo string `json:"-"`
}

// SendMessage signs and sends a message. A type other than the three is
// refused before anything is read or sent.
func (k *Kernel) SendMessage(ctx context.Context, o Outgoing) (*beach.Ack, beach.Message, error) {
	m := beach.Message{To: strings.TrimSpace(o.To), Type: o.Type, Content: o.Content, RespondingTo: o.RespondingTo}
	if m.Type != "" {
		if err := beach.CheckType(m.Type); err != nil {
			return nil, m, err
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
	c, err := k.Beach(ctx)
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

// maxWaiting bounds the messages kept waiting for a wake (or inbox_check)
// to deliver them: past it, the next stay unread on the beach until
// these are delivered, so a flood (keys cost nothing) fills the beach's
// inbox, not this instance's store.
const maxWaiting = 200

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
// maxWaiting messages undelivered it fetches nothing, and never more than
// makes them maxWaiting.
func (k *Kernel) FetchInbox(ctx context.Context, o FetchOptions) (*Inbox, error) {
	k.net.fetching.Lock()
	defer k.net.fetching.Unlock()
	c, err := k.Beach(ctx)
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
	room := maxWaiting - waiting
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
func (k *Kernel) keep(ctx context.Context, host string, good []beach.Verified[beach.Message], bad []beach.Refused, out *Inbox) error {
	out.Refused = append(out.Refused, bad...)
	now := k.now()
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
func (k *Kernel) inboxAfter(ctx context.Context, host string) (int64, error) {
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
func (k *Kernel) fetchedTo(ctx context.Context, host string, top int64) error {
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
func (k *Kernel) CheckInbox(ctx context.Context, all bool) (*Inbox, error) {
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

// Received lists the messages received, newest last (the page's view).
func (k *Kernel) Received(ctx context.Context, limit int) ([]InboxMessage, error) {
	recs, err := k.store.ReceivedMessages(ctx, false, limit)
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
func (k *Kernel) SaveToBeach(ctx context.Context) (*beach.Ack, int, error) {
	data, err := k.blocks.Export(ctx)
	if err != nil {
		return nil, 0, err
	}
	c, err := k.Beach(ctx)
	if err != nil {
		return nil, 0, err
	}
	ack, err := c.Save(ctx, data)
	return ack, len(data), err
}

// RestoreFromBeach fetches the instance's save point, checks that its own
// key signed it, opens it and imports its blocks (keeping existing blocks
// unless replace).
func (k *Kernel) RestoreFromBeach(ctx context.Context, replace bool) (*blocks.ImportResult, *beach.Verified[beach.SavePoint], error) {
	c, err := k.Beach(ctx)
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

// now is the kernel's clock.
func (k *Kernel) now() time.Time {
	if k.opts.Now != nil {
		return k.opts.Now()
	}
	return time.Now()
}
