package beach

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/termtext"
)

// Client talks to a beach for one instance: it signs what the instance
// writes and verifies everything it reads, so a dishonest beach can hide
// statements but cannot forge or alter them. Refused entries are reported
// beside the good ones, with the reason.
//
// It never follows redirects (a signed request goes only where it was
// addressed), and retries a request the beach rate-limited (429) or was
// too busy for (503 with Retry-After) up to three times, waiting as long as
// the beach's Retry-After says (at most 10 s).
type Client struct {
	base *url.URL
	id   *identity.Identity
	// HTTP sends the requests; NewClient sets one with a 2-minute timeout.
	HTTP *http.Client
	// Nonces remembers the messages this instance has accepted, so a
	// message a beach hands out twice is refused the second time. NewClient
	// sets an in-memory one; an instance sets its own store, where it
	// keeps every message it accepted.
	Nonces Nonces
	now    func() time.Time // the signing clock
}

// Nonces records the (agent, nonce) pairs of the messages an instance
// accepted; Use reports whether the pair is new and records it. signed is
// the message's signed time: a memory that forgets old pairs refuses a
// message signed before what it forgot, with an *identity.Refusal whose
// reason is stale (its nonce can no longer be checked).
type Nonces interface {
	Use(ctx context.Context, agent, nonce string, signed time.Time) (fresh bool, err error)
}

// MemoryNonces is a Nonces for the life of a process.
type MemoryNonces struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Use implements Nonces.
func (m *MemoryNonces) Use(_ context.Context, agent, nonce string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	k := agent + " " + nonce
	if m.seen[k] {
		return false, nil
	}
	m.seen[k] = true
	return true, nil
}

// NewClient makes a client for the beach at baseURL (http or https). id
// signs writes; it may be nil for a client that only reads passports and
// marks.
func NewClient(baseURL string, id *identity.Identity) (*Client, error) {
	u, err := ParseURL(baseURL)
	if err != nil {
		return nil, err
	}
	return &Client{base: u, id: id, now: time.Now, Nonces: &MemoryNonces{},
		HTTP: &http.Client{Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// ParseURL reads a beach's base URL: http or https, with a host (a
// trailing slash is dropped), or an error that says what is wanted.
func ParseURL(baseURL string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("beach URL %q: want http://host[:port] or https://host[:port]", clip.Text(baseURL, 200))
	}
	return u, nil
}

// URL is the beach's base URL.
func (c *Client) URL() string { return c.base.String() }

// Error is a request the beach refused: the HTTP status, the reason (an
// identity.Reason*, or rate_limited, too_large, not_found, superseded,
// wrong_beach, internal; NotABeach when the server that answered is no
// beach) and the beach's message.
type Error struct {
	Status  int
	Reason  string
	Message string
}

// Error says it on one inert line: the reason and message are the beach's
// text (see termtext.Line).
func (e *Error) Error() string {
	if e.Reason == NotABeach {
		return e.Message
	}
	return fmt.Sprintf("beach refused (%d %s): %s", e.Status, termtext.Line(e.Reason), termtext.Line(e.Message))
}

// NotABeach is the reason of an Error answered by a server that is not a
// beach: an HTTP error without a beach's JSON error.
const NotABeach = "not_a_beach"

// Verified is a statement whose signature the client checked.
type Verified[T any] struct {
	ID       int64              `json:"id,omitempty"` // messages: the beach's id
	Agent    string             `json:"agent"`
	Time     time.Time          `json:"time"`
	Received string             `json:"received"`
	Body     T                  `json:"body"`
	Envelope *identity.Envelope `json:"envelope"`
}

// Refused is an entry a read returned that did not verify.
type Refused struct {
	ID     int64  `json:"id,omitempty"`
	Agent  string `json:"agent"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// stored is the beach's answer for one statement.
type stored struct {
	ID       int64              `json:"id"`
	Agent    string             `json:"agent"`
	Received string             `json:"received"`
	Envelope *identity.Envelope `json:"envelope"`
}

// Ack is the beach's answer to an accepted write.
type Ack struct {
	Agent string `json:"agent"`
	Time  string `json:"time"`
	Nonce string `json:"nonce"`
	ID    int64  `json:"id,omitempty"`
}

// Sign makes an envelope with the client's identity.
func (c *Client) Sign(kind string, body any) (*identity.Envelope, error) {
	if c.id == nil {
		return nil, errors.New("beach client: no identity to sign with")
	}
	return c.id.Sign(kind, body, c.now())
}

// PublishPassport signs and publishes the instance's passport.
func (c *Client) PublishPassport(ctx context.Context, p Passport) (*Ack, error) {
	return c.submit(ctx, "/v1/passports", KindPassport, p)
}

// Passport reads and verifies an agent's passport.
func (c *Client) Passport(ctx context.Context, agent string) (*Verified[Passport], error) {
	var s stored
	if err := c.do(ctx, http.MethodGet, "/v1/passports/"+url.PathEscape(agent), nil, &s); err != nil {
		return nil, err
	}
	v, err := check[Passport](s, KindPassport)
	if err != nil {
		return nil, fmt.Errorf("passport of %s from %s: %w", agent, c.base, err)
	}
	if v.Agent != agent {
		return nil, fmt.Errorf("passport of %s from %s: the beach answered with %s's passport", agent, c.base, v.Agent)
	}
	return v, nil
}

// Passports lists the passports published most recently, verified.
func (c *Client) Passports(ctx context.Context, limit int) ([]Verified[Passport], []Refused, error) {
	var out struct {
		Passports []stored `json:"passports"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/passports?limit="+strconv.Itoa(limit), nil, &out); err != nil {
		return nil, nil, err
	}
	good, bad := checkAll[Passport](out.Passports, KindPassport, nil)
	return good, bad, nil
}

// Mark signs and leaves a mark on url.
func (c *Client) Mark(ctx context.Context, url, purpose string) (*Ack, error) {
	return c.submit(ctx, "/v1/marks", KindMark, Mark{URLHash: URLHash(url), Purpose: purpose})
}

// Marks reads and verifies the latest marks on url.
func (c *Client) Marks(ctx context.Context, rawURL string, limit int) ([]Verified[Mark], []Refused, error) {
	hash := URLHash(rawURL)
	var out struct {
		Marks []stored `json:"marks"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/marks?url_hash="+hash+"&limit="+strconv.Itoa(limit), nil, &out); err != nil {
		return nil, nil, err
	}
	good, bad := checkAll(out.Marks, KindMark, func(v *Verified[Mark]) error {
		if v.Body.URLHash != hash {
			return &identity.Refusal{Reason: "wrong_url", Detail: "a mark on another URL"}
		}
		return nil
	})
	return good, bad, nil
}

// Send signs and sends a message; the Ack carries the beach's message id.
func (c *Client) Send(ctx context.Context, m Message) (*Ack, error) {
	return c.submit(ctx, "/v1/messages", KindMessage, m)
}

// Inbox takes the instance's unread messages (the beach marks them read)
// and verifies each: signed by its sender, addressed to this instance, and
// not seen before (Nonces).
func (c *Client) Inbox(ctx context.Context, limit int) ([]Verified[Message], []Refused, error) {
	return c.inbox(ctx, InboxCheck{Beach: c.base.Host}, limit)
}

// InboxAfter is Inbox for the messages with ids above after, read or not:
// to fetch again what a lost answer carried. Messages this instance
// already accepted come back refused as replays.
func (c *Client) InboxAfter(ctx context.Context, after int64, limit int) ([]Verified[Message], []Refused, error) {
	return c.inbox(ctx, InboxCheck{Beach: c.base.Host, After: &after}, limit)
}

func (c *Client) inbox(ctx context.Context, check InboxCheck, limit int) ([]Verified[Message], []Refused, error) {
	e, err := c.Sign(KindInboxCheck, check)
	if err != nil {
		return nil, nil, err
	}
	var out struct {
		Messages []stored `json:"messages"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/inbox?limit="+strconv.Itoa(limit), e, &out); err != nil {
		return nil, nil, err
	}
	me := c.id.Agent()
	good, bad := checkAll(out.Messages, KindMessage, func(v *Verified[Message]) error {
		if v.Body.To != me {
			return &identity.Refusal{Reason: "wrong_recipient", Detail: fmt.Sprintf("addressed to %s, not to this instance", v.Body.To)}
		}
		fresh, err := c.Nonces.Use(ctx, v.Agent, v.Envelope.Nonce, v.Time)
		if err != nil {
			return err
		}
		if !fresh {
			return &identity.Refusal{Reason: identity.ReasonReplay, Detail: "this message (its sender and nonce) was already received: a replay"}
		}
		return nil
	})
	return good, bad, nil
}

// Save seals an export of the instance's blocks (Kernel.Export) and leaves
// it with the beach, replacing the previous save point.
func (c *Client) Save(ctx context.Context, export []byte) (*Ack, error) {
	if c.id == nil {
		return nil, errors.New("beach client: no identity to seal with")
	}
	sp, err := Seal(c.id, export)
	if err != nil {
		return nil, err
	}
	return c.submit(ctx, "/v1/savepoints", KindSavePoint, sp)
}

// Restore fetches the instance's save point, checks that its own key signed
// it, and opens it: the export Kernel.Import reads.
func (c *Client) Restore(ctx context.Context) ([]byte, *Verified[SavePoint], error) {
	e, err := c.Sign(KindSavePointGet, Audience{Beach: c.base.Host})
	if err != nil {
		return nil, nil, err
	}
	var s stored
	if err := c.do(ctx, http.MethodPost, "/v1/savepoints/get", e, &s); err != nil {
		return nil, nil, err
	}
	v, err := check[SavePoint](s, KindSavePoint)
	if err != nil {
		return nil, nil, fmt.Errorf("save point from %s: %w", c.base, err)
	}
	if v.Agent != c.id.Agent() {
		return nil, nil, fmt.Errorf("save point from %s: signed by %s, not by this instance", c.base, v.Agent)
	}
	plain, err := v.Body.Open(c.id)
	if err != nil {
		return nil, nil, err
	}
	return plain, v, nil
}

func (c *Client) submit(ctx context.Context, path, kind string, body any) (*Ack, error) {
	e, err := c.Sign(kind, body)
	if err != nil {
		return nil, err
	}
	var ack Ack
	if err := c.do(ctx, http.MethodPost, path, e, &ack); err != nil {
		return nil, err
	}
	return &ack, nil
}

// do sends one request, retrying rate-limited ones, and decodes the answer.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return fmt.Errorf("beach %s: %w", c.base, err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		_ = resp.Body.Close() // what was read is the answer; closing has nothing to add
		if err != nil {
			return fmt.Errorf("beach %s: reading the answer: %w", c.base, err)
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("beach %s: the answer to %s %s is not a beach's JSON (is it a beach? check the beach URL): %w", c.base, method, path, err)
			}
			return nil
		}
		var e struct {
			Error  string `json:"error"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			endpoint, _, _ := strings.Cut(path, "?")
			// Not a beach's answer (a web server's 404 page, a proxy's
			// error): its body is no message for a person.
			return &Error{Status: resp.StatusCode, Reason: NotABeach,
				Message: fmt.Sprintf("%s is not a beach: %s %s answered HTTP %d without a beach's JSON error (check the beach URL)", c.base, method, endpoint, resp.StatusCode)}
		}
		// 429: over a rate limit; 503 with Retry-After: busy (too many large
		// uploads at once). Both say when to come back.
		busy := resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
		if (resp.StatusCode == http.StatusTooManyRequests || busy) && attempt < 3 {
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			select {
			case <-time.After(time.Duration(min(max(wait, 1), 10)) * time.Second):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return &Error{Status: resp.StatusCode, Reason: e.Reason, Message: e.Error}
	}
}

// check verifies one stored statement.
func check[T Body](s stored, kind string) (*Verified[T], error) {
	body, t, err := Open[T](s.Envelope, kind)
	if err != nil {
		return nil, err
	}
	return &Verified[T]{ID: s.ID, Agent: s.Envelope.Agent, Time: t, Received: s.Received, Body: *body, Envelope: s.Envelope}, nil
}

// checkAll verifies a list, with extra checks per entry, and sorts it into
// the good and the refused.
func checkAll[T Body](list []stored, kind string, extra func(*Verified[T]) error) ([]Verified[T], []Refused) {
	good, bad := []Verified[T]{}, []Refused(nil)
	for _, s := range list {
		v, err := check[T](s, kind)
		if err == nil && extra != nil {
			err = extra(v)
		}
		if err != nil {
			r := Refused{ID: s.ID, Agent: s.Agent, Reason: "error", Detail: err.Error()}
			if ref, ok := identity.AsRefusal(err); ok {
				r.Reason, r.Detail = ref.Reason, ref.Detail
			}
			bad = append(bad, r)
			continue
		}
		good = append(good, *v)
	}
	return good, bad
}
