package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The page's bsp(name, spindle, point, mode) reaches every mode; a query
// the mode cannot read is a 400 that says why.
func TestTheBSPRouteTakesTheMode(t *testing.T) {
	_, ts := testServer(t, `{"responses":[]}`)
	var r struct {
		Mode    string
		Entries []struct{ Address string }
		Error   string
	}
	if code := get(t, ts, "/api/bsp/wake?spindle=0.9.2&mode=ring", &r); code != http.StatusOK || r.Mode != "ring" || len(r.Entries) != 5 || r.Entries[0].Address != "0.91" {
		t.Fatalf("ring: %d %+v", code, r)
	}
	r.Entries = nil
	if code := get(t, ts, "/api/bsp/wake?point=-1", &r); code != http.StatusOK || r.Mode != "disc" || len(r.Entries) != 9 {
		t.Fatalf("disc: %d %+v", code, r)
	}
	if code := get(t, ts, "/api/bsp/wake?mode=ring", &r); code != http.StatusBadRequest || !strings.Contains(r.Error, "ring mode needs a spindle") {
		t.Fatalf("ring without a spindle: %d %+v", code, r)
	}
}

// A shell the LLM writes reads a block in any mode through props.bsp.
func TestTheShellsBSPPropTakesTheMode(t *testing.T) {
	b := newBrowserSession(t, nil)
	b.do(t, "open the page", chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")))
	code, err := compileShell(`function Shell(props) {
  const [out, setOut] = React.useState('reading');
  React.useEffect(() => {
    props.bsp('wake', '0.9.2', undefined, 'ring').then(r => setOut(r.mode + ' ' + r.entries.map(e => e.address).join(',')), e => setOut('error ' + e));
  }, []);
  return <p id="out">{out}</p>;
}
export default Shell;`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](`window.hermitcrab.renderShell({id: 1, code: `+jsString(code)+`}) && null`)); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "out", "ring 0.91,0.93,0.94,0.95,0.96")
}
