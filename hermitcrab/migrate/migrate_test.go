package migrate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/pscale"
)

const testAPIKey = "sk-ant-api03-TESTKEY-never-import-0123456789"

func readFile(t *testing.T, name string) (string, []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func mustFile(t *testing.T, name string, defaults map[string]*pscale.Block) *Result {
	t.Helper()
	path, data := readFile(t, name)
	r, err := File(path, data, defaults)
	if err != nil {
		t.Fatalf("File(%s): %v", name, err)
	}
	return r
}

func names(r *Result) []string {
	var ns []string
	for n := range r.Blocks {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// text returns the text at addr of a result block, failing if it is absent.
func text(t *testing.T, r *Result, block, addr string) string {
	t.Helper()
	b := r.Blocks[block]
	if b == nil {
		t.Fatalf("no block %q (blocks: %v)", block, names(r))
	}
	a, err := pscale.ParseAddress(addr)
	if err != nil {
		t.Fatal(err)
	}
	v, err := pscale.Read(b, a)
	if err != nil {
		t.Fatalf("block %q: %v", block, err)
	}
	return v.Content
}

func hasNote(r *Result, parts ...string) bool {
	for _, n := range r.Notes {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return true
		}
	}
	return false
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mustParse(t *testing.T, s string) *pscale.Block {
	t.Helper()
	b, _, err := pscale.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testDefaults(t *testing.T) map[string]*pscale.Block {
	return map[string]*pscale.Block{
		"constitution": mustParse(t, `{"place":1,"tree":{"0":{"_":"You are a hermitcrab instance.","1":"Drives","5":"Naming: name yourself after a real relationship."}}}`),
		"history":      mustParse(t, `{"place":1,"tree":{"0":{"_":"What happened, oldest first."}}}`),
		"stash":        mustParse(t, `{"place":1,"tree":{"0":{"_":"Notes for your future self."}}}`),
		"wake":         mustParse(t, `{"place":1,"tree":{"0":{"_":"How each call is put together."}}}`),
		"capabilities": mustParse(t, `{"place":1,"tree":{"0":{"_":"Everything you can do."}}}`),
	}
}

func TestShellFileImportsBlocksAndNotesConversions(t *testing.T) {
	r := mustFile(t, "shell.json", nil)
	if got := names(r); !reflect.DeepEqual(got, []string{"cook", "purpose", "wake"}) {
		t.Fatalf("blocks %v", got)
	}
	if !hasNote(r, "shell file") || !hasNote(r, `"name"`, "ignored") || !hasNote(r, `"version"`, "ignored") {
		t.Errorf("notes %q", r.Notes)
	}
	if !hasNote(r, `block "wake"`, "decimal 1 read as place") || !hasNote(r, `block "cook"`, "tuning") {
		t.Errorf("conversion notes missing: %q", r.Notes)
	}
	if got := text(t, r, "wake", "0.9.1"); got != "constitution 0, purpose 0" {
		t.Errorf("wake 0.9.1 = %q", got)
	}
	// tuning 0.5 has no digits before the point: root under "0", place 1.
	if got := text(t, r, "cook", "0.1"); got != "Compress nine entries into one." || r.Blocks["cook"].Place != 1 {
		t.Errorf("cook 0.1 = %q, place %d", got, r.Blocks["cook"].Place)
	}
}

func TestBlockMapConvertsEveryShape(t *testing.T) {
	r := mustFile(t, "blockmap.json", nil)
	if got := names(r); !reflect.DeepEqual(got, []string{"relationships", "stash"}) {
		t.Fatalf("blocks %v", got)
	}
	if !hasNote(r, "block map") || !hasNote(r, `block "stash"`, "no place given") {
		t.Errorf("notes %q", r.Notes)
	}
	if got := text(t, r, "stash", "0.1"); got != "Ask about the garden." {
		t.Errorf("stash 0.1 = %q", got)
	}
}

func TestSingleBlockIsNamedAfterItsFile(t *testing.T) {
	r := mustFile(t, "relationships.json", nil)
	if got := names(r); !reflect.DeepEqual(got, []string{"relationships"}) {
		t.Fatalf("blocks %v", got)
	}
	if !hasNote(r, "single block", `"relationships"`) || !hasNote(r, "rendition") {
		t.Errorf("notes %q", r.Notes)
	}
	if got := text(t, r, "relationships", "0.2.1"); got != "The first instance." {
		t.Errorf("0.2.1 = %q", got)
	}
}

func TestSingleBlockWithBadFileNameSaysToRename(t *testing.T) {
	_, data := readFile(t, "relationships.json")
	_, err := File("/tmp/My Friends.json", data, nil)
	if err == nil || !strings.Contains(err.Error(), `"My Friends"`) || !strings.Contains(err.Error(), "rename the file") {
		t.Fatalf("err %v", err)
	}
}

func TestBadBlockNameInMapIsError(t *testing.T) {
	_, err := File("x.json", []byte(`{"blocks": {"../etc": {"place":1,"tree":{"0":"x"}}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `"../etc"`) || !strings.Contains(err.Error(), "rename") {
		t.Fatalf("err %v", err)
	}
}

func TestBlockMapWithABlockNamedBlocksIsNotAShellFile(t *testing.T) {
	r, err := File("m.json", []byte(`{"blocks": {"place":1,"tree":{"0":"a"}}, "wake": {"place":1,"tree":{"0":"b"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !reflect.DeepEqual(got, []string{"blocks", "wake"}) {
		t.Fatalf("blocks %v", got)
	}
}

func TestG1DumpImportsHCBlocksAndLeavesG0Keys(t *testing.T) {
	r := mustFile(t, "localstorage-g1.json", testDefaults(t))
	if got := names(r); !reflect.DeepEqual(got, []string{"history", "purpose"}) {
		t.Fatalf("blocks %v (defaults must not be added to a G1 dump)", got)
	}
	if got := text(t, r, "history", "0.1"); got != "First boot went well." {
		t.Errorf("history 0.1 = %q", got)
	}
	if !hasNote(r, `"hcmem:/memories/M-1.md"`, "not migrated", "G1 already ran") {
		t.Errorf("G0 key not noted: %q", r.Notes)
	}
	if !hasNote(r, `"hc_conversation"`, "skipped") || !hasNote(r, `"hermitcrab_api_key"`, "never imported") {
		t.Errorf("skips not noted: %q", r.Notes)
	}
	if !hasNote(r, `block "history"`, "decimal 1 read as place") {
		t.Errorf("conversion not noted: %q", r.Notes)
	}
	if s := marshal(t, r); strings.Contains(s, testAPIKey) || strings.Contains(s, "TESTKEY") {
		t.Fatal("the API key value leaked into the result")
	}
}

func TestG0DumpMigratesPerCleanBuildSpec(t *testing.T) {
	defaults := testDefaults(t)
	before := marshal(t, defaults)
	r := mustFile(t, "localstorage-g0.json", defaults)

	if marshal(t, defaults) != before {
		t.Fatal("File changed the defaults it was given")
	}
	if got := names(r); !reflect.DeepEqual(got, []string{"capabilities", "constitution", "history", "stash", "wake"}) {
		t.Fatalf("blocks %v", got)
	}
	// Eleven M-files, in numeric order (M-10 after M-9, not after M-1):
	// nine fill history's top, which grows (the old top becomes 01), and
	// the last two open 02.
	for i := 1; i <= 11; i++ {
		addr := fmt.Sprintf("0%d.%d", (i-1)/9+1, (i-1)%9+1)
		want := fmt.Sprintf("[/memories/M-%d.md] # Session %d\n", i, i)
		if got := text(t, r, "history", addr); !strings.HasPrefix(got, want) {
			t.Errorf("history %s = %q; want it to start %q", addr, got, want)
		}
	}
	if got := text(t, r, "history", "01"); !strings.Contains(got, "/memories/M-1.md to /memories/M-9.md") {
		t.Errorf("group 01 label %q", got)
	}
	if got := text(t, r, "history", "02"); got != "" {
		t.Errorf("group 02 is still open and has no label yet: %q", got)
	}
	if got := text(t, r, "history", "0"); got != "What happened, oldest first." {
		t.Errorf("history 0 = %q: should keep the default's text", got)
	}
	// Identity goes under the default constitution's Naming node, which keeps its text.
	if got := text(t, r, "constitution", "0.5"); got != "Naming: name yourself after a real relationship." {
		t.Errorf("constitution 0.5 = %q", got)
	}
	if got := text(t, r, "constitution", "0.5.1"); got != "[/memories/identity.md] I have not chosen a name yet. David calls me 'crab'." {
		t.Errorf("constitution 0.5.1 = %q", got)
	}
	// Stash: S-numbered in numeric order (0.14 < 0.2), then the other file.
	wantStash := []string{"[/memories/S-0.14.md] Draft: letter to Limn.", "[/memories/S-0.2.md] Idea: a shell with a tide chart.", "[/memories/notes.md] Loose notes: check the weather API."}
	for i, want := range wantStash {
		if got := text(t, r, "stash", fmt.Sprintf("0.%d", i+1)); got != want {
			t.Errorf("stash 0.%d = %q, want %q", i+1, got, want)
		}
	}
	if !hasNote(r, "/memories/M-10.md", `"history"`, "02.1") || !hasNote(r, `block "wake"`, "seeded from the defaults") {
		t.Errorf("notes %q", r.Notes)
	}
	if !hasNote(r, `"theme"`, "skipped") || !hasNote(r, `"hermitcrab_api_key"`, "never imported") {
		t.Errorf("skips not noted: %q", r.Notes)
	}
	if s := marshal(t, r); strings.Contains(s, testAPIKey) || strings.Contains(s, "TESTKEY") {
		t.Fatal("the API key value leaked into the result")
	}
}

func TestG0WithoutDefaultsMakesBlocksThatSayTheyCameFromG0(t *testing.T) {
	dump := `{"hcmem:/memories/M1.md": "one", "hcmem:/memories/my-name.txt": "Tidepool"}`
	r, err := File("dump.json", []byte(dump), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !reflect.DeepEqual(got, []string{"constitution", "history"}) {
		t.Fatalf("blocks %v", got)
	}
	if got := text(t, r, "history", "0"); !strings.Contains(got, "migrated from G0") {
		t.Errorf("history 0 = %q", got)
	}
	if got := text(t, r, "history", "0.1"); got != "[/memories/M1.md] one" {
		t.Errorf("history 0.1 = %q", got)
	}
	if got := text(t, r, "constitution", "0.5"); !strings.HasPrefix(got, "Naming") {
		t.Errorf("constitution 0.5 = %q", got)
	}
	if got := text(t, r, "constitution", "0.5.1"); got != "[/memories/my-name.txt] Tidepool" {
		t.Errorf("constitution 0.5.1 = %q", got)
	}
}

func TestG0NumberedFilesSortByNumber(t *testing.T) {
	dump := map[string]string{}
	for _, p := range []string{"M_12", "M2", "M-0.14", "m-0.2", "M-0.1", "M-0.1.md"} {
		dump["hcmem:/memories/"+p] = p
	}
	data, _ := json.Marshal(dump)
	r, err := File("dump.json", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	// "M-0.1" without an extension keeps its ".1"; ties break by path.
	want := []string{"M-0.1", "M-0.1.md", "M-0.14", "m-0.2", "M2", "M_12"}
	for i, p := range want {
		if got := text(t, r, "history", fmt.Sprintf("0.%d", i+1)); got != "[/memories/"+p+"] "+p {
			t.Errorf("history 0.%d = %q, want file %s", i+1, got, p)
		}
	}
}

func TestAHundredG0MemoriesImportWhole(t *testing.T) {
	dump := map[string]string{}
	for i := 1; i <= 100; i++ {
		dump[fmt.Sprintf("hcmem:/memories/M-%d.md", i)] = fmt.Sprintf("session %d", i)
	}
	data, _ := json.Marshal(dump)
	r, err := File("dump.json", data, testDefaults(t))
	if err != nil {
		t.Fatal(err)
	}
	h := r.Blocks["history"]
	if h.Place != 3 {
		t.Fatalf("history place %d, want 3 (100 entries need two growths)", h.Place)
	}
	for i := 1; i <= 100; i++ {
		v := i - 1
		addr := fmt.Sprintf("0%d%d.%d", v/81+1, v/9%9+1, v%9+1)
		if got := text(t, r, "history", addr); got != fmt.Sprintf("[/memories/M-%d.md] session %d", i, i) {
			t.Fatalf("history %s = %q", addr, got)
		}
	}
	if got := text(t, r, "history", "01"); !strings.Contains(got, "/memories/M-1.md to /memories/M-81.md") {
		t.Errorf("the first 81 are labelled: %q", got)
	}
	if got := text(t, r, "history", "0"); got != "What happened, oldest first." {
		t.Errorf("history's description: %q", got)
	}
}

func TestANamingFileGoesToConstitutionNaming(t *testing.T) {
	r, err := File("dump.json", []byte(`{"hcmem:/memories/naming.md": "I chose Tidepool.", "hcmem:/memories/M-1.md": "one"}`), testDefaults(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, r, "constitution", "0.5.1"); got != "[/memories/naming.md] I chose Tidepool." {
		t.Fatalf("constitution 0.5.1 = %q", got)
	}
}

func TestACorruptKeyIsSkippedAndNamedAndTheRestImports(t *testing.T) {
	dump := `{"hc:purpose": "{\"place\": 1, \"tree\": ", "hc:Bad Name": "{\"place\":1,\"tree\":{\"0\":\"x\"}}", "hc:stash": 7,
		"hc:wake": "{\"place\":1,\"tree\":{\"0\":\"w\"}}"}`
	r, err := File("dump.json", []byte(dump), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !reflect.DeepEqual(got, []string{"wake"}) {
		t.Fatalf("blocks %v", got)
	}
	if !reflect.DeepEqual(r.Unreadable, []string{"hc:Bad Name", "hc:purpose", "hc:stash"}) {
		t.Fatalf("unreadable %v", r.Unreadable)
	}
	if !hasNote(r, `key "hc:purpose" skipped`, "not valid JSON") || !hasNote(r, `key "hc:stash" skipped`, "a number, not a string") {
		t.Fatalf("notes %q", r.Notes)
	}
	if _, err := File("dump.json", []byte(`{"hc:purpose": "{"}`), nil); err == nil || !strings.Contains(err.Error(), "no key of the localStorage dump could be read: hc:purpose") {
		t.Fatalf("nothing readable: %v", err)
	}
}

func TestAPIKeysAreNeverImportedEvenUnderHCPrefix(t *testing.T) {
	dump := fmt.Sprintf(`{"hc:openai-apikey": %q, "MY_API_KEY": %q, "hc:wake": "{\"place\":1,\"tree\":{\"0\":\"w\"}}"}`, testAPIKey, testAPIKey)
	r, err := File("dump.json", []byte(dump), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !reflect.DeepEqual(got, []string{"wake"}) {
		t.Fatalf("blocks %v", got)
	}
	if s := marshal(t, r); strings.Contains(s, "TESTKEY") {
		t.Fatal("the API key value leaked into the result")
	}
}

func TestDumpWithNothingToImportIsErrorWithoutValues(t *testing.T) {
	_, err := File("dump.json", []byte(fmt.Sprintf(`{"hermitcrab_api_key": %q, "theme": "dark"}`, testAPIKey)), nil)
	if err == nil || !strings.Contains(err.Error(), "nothing to import") || strings.Contains(err.Error(), "TESTKEY") {
		t.Fatalf("err %v", err)
	}
}

func TestUnrecognisedFilesAreErrorsSayingWhatIsWanted(t *testing.T) {
	cases := map[string]string{
		``:                                    "empty",
		`[1, 2]`:                              "top level is an array",
		`{}`:                                  "empty object",
		`{"a": `:                              "not valid JSON",
		`{"a": 3}`:                            `key "a" is a number`,
		`{"a": "x", "b": {"tree": {}}}`:       "mix strings",
		`{"blocks": {"p": "not a block"}}`:    `block "p" under "blocks"`,
		`{"place": 1, "tree": {"0": "x"}} {}`: "not valid JSON",
	}
	for in, want := range cases {
		_, err := File("f.json", []byte(in), nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "file f.json") {
			t.Errorf("File(%q): %v; want it to mention %q", in, err, want)
		}
	}
}
