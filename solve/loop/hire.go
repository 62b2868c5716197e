package loop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
)

// ── Step 11: HIRE ──
// Headless by default: the request is recorded (fingerprint dedupe), the
// node waits and other nodes continue; `solve hire` answers it. Another
// node of the run meeting the same gap waits on the same request, and
// its wait is recorded too (a reload, a resume or a remote coordinator
// sees it waiting). A
// fingerprint that was declined is never asked again: the node becomes
// infeasible. With Request.Interactive the human is asked on the terminal now.
func (s *stepCtx) hire(ctx context.Context, g hireGap, reason string) (stepResult, error) {
	n := s.n
	bal, err := s.st.Balance(ctx, n.ID)
	if err != nil {
		return stepResult{}, err
	}
	if g.BudgetClass == "over_budget" {
		// A new denial after a top-up is a new request.
		g.Constraints = append(g.Constraints, fmt.Sprintf("allocated $%.4f / %.0fs", bal.Allocated, bal.TimeAllocated))
	}
	fp := fingerprint(g.Tag, g.Constraints, g.BudgetClass)
	reqID, status, err := s.st.PriorRequest(ctx, n.Root, g.Tag, fp)
	if err != nil {
		return stepResult{}, err
	}
	switch status {
	case store.Declined, store.Requested, store.Delivered:
		return s.askedBefore(ctx, g, reason, reqID, status)
	}
	var similar []string
	if k, err := kg.Query(ctx, &s.st.Conn, kg.PatternID(n.Summary)); err == nil {
		for _, sg := range k.Similar {
			similar = append(similar, sg.Label)
		}
	}
	tried, err := s.attemptHistory(ctx)
	if err != nil {
		return stepResult{}, err
	}
	detail := map[string]any{"node_id": n.ID, "node_status": n.Status, "goal": n.Summary, "reason": reason, "resolver_type": g.Type,
		"need": g.Tag, "build_constraints": plainjson.List(g.Constraints), "tried": plainjson.List(tried), "failed_because": g.Rationale,
		"budget_remaining":         map[string]float64{"cost_usd": bal.RemainingCost(), "time_seconds": bal.RemainingTime()},
		"similar_past_resolutions": plainjson.List(similar), "budget_class": g.BudgetClass}
	var id string
	err = s.commit(ctx, func(tx *store.Tx) error {
		var err error
		if id, err = tx.AddRequest(ctx, n.Root, n.ID, g.Tag, fp, detail); err != nil {
			return err
		}
		return s.flow(ctx, tx, "HIRE (%s): need a human for %s (%s); request %s waits (solve hire)", reason, g.Tag, clip.Line(g.Rationale, 240), store.Short(id))
	})
	if err != nil {
		return stepResult{}, err
	}
	if s.e.cfg.Interactive && s.e.term != nil {
		if r, answered, err := s.askTerminal(ctx, g, id); err != nil || answered {
			return r, err
		}
	}
	return stepResult{status: n.Status, waitHire: true}, nil
}

// askedBefore decides a gap whose request was asked before in the run
// (one request per run and fingerprint): a decline is not asked again, an
// open request is waited on, an answer is used or ends the node. status is
// one of store.Declined, store.Requested and store.Delivered.
func (s *stepCtx) askedBefore(ctx context.Context, g hireGap, reason, reqID, status string) (stepResult, error) {
	n := s.n
	switch status {
	case store.Declined:
		return s.declined(ctx, fmt.Sprintf("capability request %s (%s) was declined before; not asking again", store.Short(reqID), g.Tag))
	case store.Requested:
		// One request per run and fingerprint: this node waits on the one
		// asked already, durably, so that a reload does not find it ready.
		if err := s.commit(ctx, func(tx *store.Tx) error {
			if err := tx.WaitOn(ctx, reqID, n.ID); err != nil {
				return err
			}
			return s.flow(ctx, tx, "HIRE (%s): %s was asked already; waits on request %s (solve hire)", reason, g.Tag, store.Short(reqID))
		}); err != nil {
			return stepResult{}, err
		}
		return stepResult{status: n.Status, waitHire: true}, nil
	}
	// Delivered: the answer's resolver, not yet tried here, is used now;
	// an answer that was tried and still leaves the node needing the same
	// thing ends it, saying so (a failed hired tool asks anew: its request
	// names the tool that failed).
	if id, err := s.st.DeliveredResolver(ctx, n.ID); err != nil {
		return stepResult{}, err
	} else if id != "" && n.Status == store.StatusVerifying {
		if err := s.commit(ctx, func(tx *store.Tx) error {
			if err := s.move(ctx, tx, store.StatusVerifying, store.StatusSelectingResolve); err != nil {
				return err
			}
			return s.flow(ctx, tx, "HIRE answered before: %s delivered for %s; use it", id, g.Tag)
		}); err != nil {
			return stepResult{}, err
		}
		s.n.Status = store.StatusSelectingResolve
		return s.plan(ctx, RouteAnswer{ResolverID: id, Capability: g.Tag, Rationale: "delivered by HIRE"}, true)
	}
	return s.declined(ctx, fmt.Sprintf("capability request %s (%s) was answered, and the node still needs the same thing: %s", store.Short(reqID), g.Tag, g.Rationale))
}

// askTerminal asks the human on the terminal now (Request.Interactive);
// answered is true when the request was settled there.
func (s *stepCtx) askTerminal(ctx context.Context, g hireGap, id string) (stepResult, bool, error) {
	n := s.n
	s.e.termMu.Lock()
	err := askHuman(ctx, s.st, id, s.e.term, s.e.terminal())
	s.e.termMu.Unlock()
	if err != nil {
		return stepResult{}, false, err
	}
	status, err := s.st.RequestStatus(ctx, id)
	if err != nil {
		return stepResult{}, false, err
	}
	// An answer settles every node waiting on the request (another may
	// have met the same gap meanwhile): the scheduler reloads the tree.
	switch status {
	case store.Declined:
		// Answer has ended the waiting nodes infeasible, saying why.
		s.e.progress("Node %s: INFEASIBLE: capability request %s (%s) declined on the terminal", store.Short(n.ID), store.Short(id), g.Tag)
		return stepResult{reload: true}, true, nil
	case store.Delivered:
		return stepResult{reload: true}, true, nil // the nodes go on with the resolver or budget
	}
	return stepResult{}, false, nil
}

// declined ends a node whose capability request a person declined: it
// becomes infeasible, and the flow log says why.
func (s *stepCtx) declined(ctx context.Context, why string) (stepResult, error) {
	n := s.n
	err := s.commit(ctx, func(tx *store.Tx) error {
		if err := tx.EndInfeasible(ctx, n.ID, n.Status); err != nil {
			return err
		}
		return s.flow(ctx, tx, "INFEASIBLE: %s", why)
	})
	return stepResult{status: store.StatusInfeasible}, err
}

// HireAnswer answers a capability request: exactly one of Command (a
// resolver command to register, toolized), AddUSD/AddSeconds (budget), or
// Decline.
type HireAnswer struct {
	Command string
	// Network is what the person allows the command to reach (host:port
	// entries or "all"); nothing when empty.
	Network []string
	Label   string
	// MCP answers with a tool of an MCP server (solve hire --mcp): it is
	// registered as a resolver of the capability, like Command.
	MCP        *MCPTool
	AddUSD     float64
	AddSeconds float64
	Decline    bool
	Reason     string
}

// HireOutcome is what an answer to a capability request did.
type HireOutcome struct {
	RequestID  string `json:"request_id"`
	Capability string `json:"capability_tag"`
	// Kind is decline, resolver (a command registered as ResolverID) or
	// increase_budget (AddUSD and AddSeconds shared by Nodes).
	Kind       string  `json:"kind"`
	ResolverID string  `json:"resolver_id,omitempty"`
	AddUSD     float64 `json:"add_usd,omitempty"`
	AddSeconds float64 `json:"add_seconds,omitempty"`
	// Nodes are the nodes that were waiting on the request.
	Nodes []string `json:"waiting_node_ids"`
	// Summary says it in words, as the flow log records it.
	Summary string `json:"summary"`
}

// MCPTool is one tool of an MCP server hired as a resolver: the server's
// URL, or its command and arguments (stdio), and the tool's name as the
// server gives it and as it is offered (llm/mcp's NAME__tool). A call
// sends the route's parameters as the tool's arguments.
type MCPTool struct {
	URL         string          `json:"mcp_url,omitempty"`
	Command     string          `json:"mcp_command,omitempty"`
	Args        []string        `json:"mcp_args,omitempty"`
	Tool        string          `json:"mcp_tool"`
	Offered     string          `json:"mcp_offered"`
	Description string          `json:"-"` // the server's, inert: the registry entry's description
	InputSchema json.RawMessage `json:"mcp_input_schema,omitempty"`
	CostUSD     float64         `json:"-"` // per call, as the person says (0: free)
	Seconds     float64         `json:"-"` // latency estimate (0: 10 s)
}

// HiredMCP is the MCP tool a registered resolver calls (nil for any
// other resolver).
func HiredMCP(e record.Resolver) *MCPTool {
	if _, ok := e.Metadata["mcp_tool"].(string); !ok {
		return nil
	}
	data, err := json.Marshal(e.Metadata)
	if err != nil {
		return nil
	}
	var t MCPTool
	if json.Unmarshal(data, &t) != nil {
		return nil
	}
	return &t
}

// Answer records a human's answer to the capability request whose id
// starts with prefix. The run continues with Resume.
func Answer(ctx context.Context, st *store.Store, prefix string, a HireAnswer) (HireOutcome, error) {
	var out HireOutcome
	if err := CheckNetwork(a.Network); err != nil {
		return out, err
	}
	reqs, err := st.Requests(ctx, true)
	if err != nil {
		return out, err
	}
	r, err := openRequest(reqs, prefix)
	if err != nil {
		return out, err
	}
	if err := checkAnswer(a); err != nil {
		return out, err
	}
	node, _ := r.Detail["node_id"].(string) // the node that asked
	var msg string
	err = st.Write(ctx, func(tx *store.Tx) error {
		// The nodes waiting now: another may have met the request since
		// the listing above.
		var err error
		if r.Nodes, err = tx.RequestNodes(ctx, r.ID); err != nil {
			return err
		}
		switch {
		case a.Decline:
			msg, err = answerDecline(ctx, tx, r, a, &out)
		case a.Command != "" || a.MCP != nil:
			msg, err = answerResolver(ctx, tx, r, a, node, &out)
		default:
			msg, err = answerBudget(ctx, tx, r, a, node, &out)
		}
		if err != nil {
			return err
		}
		return tx.Log(ctx, 1, node, "HIRE answered: "+msg, nil)
	})
	if err != nil {
		return out, err
	}
	out.RequestID, out.Capability, out.Nodes, out.Summary = r.ID, r.Capability, r.Nodes, msg
	return out, nil
}

// openRequest is the one open request whose id starts with prefix: an
// ambiguous or unknown prefix, or a request already answered, is refused
// before anything is written.
func openRequest(reqs []record.CapabilityRequest, prefix string) (*record.CapabilityRequest, error) {
	var r *record.CapabilityRequest
	for i := range reqs {
		if strings.HasPrefix(reqs[i].ID, prefix) {
			if r != nil {
				return nil, fmt.Errorf("request %q is ambiguous; give more characters", prefix)
			}
			r = &reqs[i]
		}
	}
	if r == nil || prefix == "" {
		return nil, fmt.Errorf("no capability request %q; list them with solve hire", prefix)
	}
	if r.Status != store.Requested {
		return nil, fmt.Errorf("request %s is already %s", store.Short(r.ID), r.Status)
	}
	return r, nil
}

// checkAnswer refuses a top-up that would take money or time away, and
// an answer that is not exactly one kind.
func checkAnswer(a HireAnswer) error {
	for _, v := range []float64{a.AddUSD, a.AddSeconds} {
		// The money cap keeps the ledger's sums finite: no top-up adds
		// more than option.MaxUSD.
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || a.AddUSD > option.MaxUSD {
			return fmt.Errorf("HireAnswer: add $%v and %vs: give positive, finite amounts, at most $1,000,000 (a top-up never takes money or time away)", a.AddUSD, a.AddSeconds)
		}
	}
	set := 0
	for _, b := range []bool{a.Command != "", a.MCP != nil, a.AddUSD > 0 || a.AddSeconds > 0, a.Decline} {
		if b {
			set++
		}
	}
	if set != 1 {
		return errors.New("answer with exactly one of: a resolver command, an MCP server, more budget (money and/or time), or a decline")
	}
	return nil
}

// answerDecline records a decline. The waiting nodes end infeasible now,
// so that a resume sees it before any paid call (a node would otherwise
// step again from the state it waits in and meet the decline only at HIRE).
func answerDecline(ctx context.Context, tx *store.Tx, r *record.CapabilityRequest, a HireAnswer, out *HireOutcome) (string, error) {
	d := r.Detail
	out.Kind = "decline"
	d["answer"] = map[string]any{"kind": out.Kind, "reason": a.Reason}
	msg := fmt.Sprintf("declined %s (%s); it will not be asked again", store.Short(r.ID), r.Capability)
	if err := tx.AnswerRequest(ctx, r.ID, store.Declined, "", d); err != nil {
		return "", err
	}
	for _, w := range r.Nodes {
		ended, err := endDeclined(ctx, tx, w, r)
		if err != nil {
			return "", err
		}
		msg += ended
	}
	return msg, nil
}

// answerResolver is toolization (B8): the human's answer (a command or an
// MCP tool) is registered as a resolver the waiting nodes use.
func answerResolver(ctx context.Context, tx *store.Tx, r *record.CapabilityRequest, a HireAnswer, node string, out *HireOutcome) (string, error) {
	d := r.Detail
	n, err := tx.CountResolvers(ctx, "human")
	if err != nil {
		return "", err
	}
	id := fmt.Sprintf("human-%s-%d", slug(r.Capability), n+1)
	typ, _ := d["resolver_type"].(string)
	if typ == "" {
		typ = "digital"
	}
	label := a.Label
	if label == "" {
		label = "Human-provided " + r.Capability
	}
	meta := map[string]any{"command": a.Command}
	if len(a.Network) > 0 {
		meta[metaNetwork], meta[metaNetworkAllowed] = a.Network, a.Network
	}
	entry := record.Resolver{ID: id, Label: label, Type: typ, Capabilities: []string{r.Capability}, BuiltBy: "human",
		BuiltForNode: node, LatencyEstimate: 10, Metadata: meta}
	if t := a.MCP; t != nil {
		if entry.Metadata, err = mcpMetadata(t); err != nil {
			return "", err
		}
		entry.Description = t.Description
		entry.CostPerInvocation = t.CostUSD
		if t.Seconds > 0 {
			entry.LatencyEstimate = t.Seconds
		}
		if a.Label == "" {
			entry.Label = "MCP tool " + t.Tool + " for " + r.Capability
		}
	}
	if err := register(ctx, &tx.Conn, entry); err != nil {
		return "", err
	}
	if err := tx.EnsureKGNode(ctx, "actor:human", "actor", "human", nil); err != nil {
		return "", err
	}
	if err := tx.AddEdge(ctx, "resolver:"+id, "built_by", "actor:human", nil); err != nil {
		return "", err
	}
	out.Kind, out.ResolverID = "resolver", id
	d["answer"] = map[string]any{"kind": out.Kind, "resolver_id": id}
	msg := fmt.Sprintf("registered resolver %s providing %s for request %s", id, r.Capability, store.Short(r.ID))
	if len(r.Nodes) > 1 {
		msg += fmt.Sprintf("; the %d nodes waiting on it use it", len(r.Nodes))
	}
	if err := tx.AnswerRequest(ctx, r.ID, store.Delivered, id, d); err != nil {
		return "", err
	}
	return msg, nil
}

// answerBudget shares the top-up evenly by the nodes waiting on the
// request: the run's allowance grows by what the human gave, never by a
// multiple of it. When none waits any more (an ancestor's reopen
// invalidated them) it goes to the node that asked, and from there to
// its nearest live ancestor.
func answerBudget(ctx context.Context, tx *store.Tx, r *record.CapabilityRequest, a HireAnswer, node string, out *HireOutcome) (string, error) {
	d := r.Detail
	waiting := r.Nodes
	if len(waiting) == 0 {
		waiting = []string{node}
	}
	k := float64(len(waiting))
	var names []string
	for i, w := range waiting {
		usd, secs := a.AddUSD/k, a.AddSeconds/k
		if i == len(waiting)-1 { // the last share takes the rounding
			usd, secs = a.AddUSD-usd*(k-1), a.AddSeconds-secs*(k-1)
		}
		if err := tx.WriteLedger(ctx, store.LedgerEntry{Node: w, Event: store.Allocate, Amount: usd, Time: secs, Description: "HIRE: budget added by a human"}); err != nil {
			return "", err
		}
		if err := tx.ReturnUnspent(ctx, w); err != nil {
			return "", err
		}
		names = append(names, store.Short(w))
	}
	out.Kind, out.AddUSD, out.AddSeconds = "increase_budget", a.AddUSD, a.AddSeconds
	d["answer"] = map[string]any{"kind": out.Kind, "add_cost": a.AddUSD, "add_time_seconds": a.AddSeconds}
	var msg string
	if len(waiting) == 1 {
		msg = fmt.Sprintf("added $%.2f and %.0fs to node %s for request %s", a.AddUSD, a.AddSeconds, names[0], store.Short(r.ID))
	} else {
		msg = fmt.Sprintf("added $%.2f and %.0fs for request %s, shared by the %d nodes waiting on it ($%.4f and %.0fs each to %s)",
			a.AddUSD, a.AddSeconds, store.Short(r.ID), len(waiting), a.AddUSD/k, a.AddSeconds/k, strings.Join(names, ", "))
	}
	if err := tx.AnswerRequest(ctx, r.ID, store.Delivered, "", d); err != nil {
		return "", err
	}
	return msg, nil
}

// endDeclined ends infeasible a live node waiting on a declined request,
// unless it has ended already; it says so in the answer's message.
func endDeclined(ctx context.Context, tx *store.Tx, node string, r *record.CapabilityRequest) (string, error) {
	if node == "" {
		return "", nil
	}
	n, err := tx.Node(ctx, node)
	if err != nil {
		return "", err
	}
	switch n.Status {
	case store.StatusResolved, store.StatusInfeasible, store.StatusFailed, store.StatusGated:
		return "", nil
	}
	if n.Invalidated {
		return "", nil
	}
	if err := tx.EndInfeasible(ctx, n.ID, n.Status); err != nil {
		return "", err
	}
	why := fmt.Sprintf("Node %s: INFEASIBLE: capability request %s (%s) was declined", store.Short(n.ID), store.Short(r.ID), r.Capability)
	if err := tx.Log(ctx, 1, n.ID, why, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("; node %s (%s) is infeasible", store.Short(n.ID), clip.Line(n.Summary, 60)), nil
}

// askHuman asks on the terminal (Request.Interactive).
func askHuman(ctx context.Context, st *store.Store, id string, in *bufio.Reader, out io.Writer) error {
	reqs, err := st.Requests(ctx, false)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if r.ID != id {
			continue
		}
		fmt.Fprint(out, FormatRequest(r))
		fmt.Fprint(out, "Answer: [c]ommand to register, [b]udget to add (USD), [d]ecline, or Enter to leave it open: ")
		line, err := in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the answer: %w", err)
		}
		kind, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		var a HireAnswer
		switch kind {
		case "c":
			a.Command = arg
		case "b":
			if a.AddUSD, err = strconv.ParseFloat(arg, 64); err != nil {
				fmt.Fprintf(out, "%q is not an amount in USD; the request stays open\n", arg)
				return nil
			}
		case "d":
			a.Decline = true
		default:
			return nil
		}
		done, err := Answer(ctx, st, id, a)
		if err == nil {
			fmt.Fprintln(out, done.Summary)
		}
		return err
	}
	return nil
}

// FormatRequest renders a request with the context the spec lists: need,
// tried, failed because, budget remaining, similar past resolutions.
func FormatRequest(r record.CapabilityRequest) string {
	var b strings.Builder
	d := r.Detail
	fmt.Fprintf(&b, "request %s  [%s]  root %s\n", store.Short(r.ID), r.Status, store.Short(r.RootID))
	fmt.Fprintf(&b, "  Goal:   %s\n  Need:   %s (%s, %s)\n", text(d["goal"]), r.Capability, text(d["resolver_type"]), text(d["reason"]))
	var waiting []string
	for _, n := range r.Nodes {
		waiting = append(waiting, store.Short(n))
	}
	if len(waiting) == 0 {
		waiting = []string{"none"}
	}
	fmt.Fprintf(&b, "  Waiting nodes: %s\n", strings.Join(waiting, ", "))
	fmt.Fprintf(&b, "  Tried:%s\n  Failed because: %s\n", bullets(d["tried"]), text(d["failed_because"]))
	budget := "unknown"
	if m, ok := d["budget_remaining"].(map[string]any); ok {
		cost, _ := m["cost_usd"].(float64)
		secs, _ := m["time_seconds"].(float64)
		budget = fmt.Sprintf("$%.4f and %s of wall time", cost, time.Duration(secs*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintf(&b, "  Build constraints:%s\n  Budget remaining: %s\n  Similar past resolutions:%s\n", bullets(d["build_constraints"]), budget, bullets(d["similar_past_resolutions"]))
	return b.String()
}

// text is a detail field as a person reads it.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return "-"
	}
	return jsonOrText(v)
}

// jsonOrText is v as JSON for a person to read, or as Go prints it when
// JSON cannot hold it (a NaN figure).
func jsonOrText(v any) string {
	if s, err := store.JSONText(v); err == nil {
		return s
	}
	return fmt.Sprint(v)
}

// bullets is a list of details, one per line ("none" when empty).
func bullets(v any) string {
	items, _ := v.([]any)
	if len(items) == 0 {
		return " none"
	}
	var b strings.Builder
	for _, it := range items {
		b.WriteString("\n    - " + text(it))
	}
	return b.String()
}

// mcpMetadata is a hired MCP tool as its registry entry's metadata.
func mcpMetadata(t *MCPTool) (map[string]any, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var meta map[string]any
	return meta, json.Unmarshal(data, &meta)
}

// hiredWhat names what a hired resolver runs: its command, or its MCP
// server and tool.
func hiredWhat(e record.Resolver) string {
	if t := HiredMCP(e); t != nil {
		server := t.URL
		if server == "" {
			server = strings.Join(append([]string{t.Command}, t.Args...), " ")
		}
		return "MCP tool " + t.Tool + " of " + server
	}
	cmd, _ := e.Metadata["command"].(string)
	return cmd
}
