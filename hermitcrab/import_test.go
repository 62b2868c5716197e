package hermitcrab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestAHundredMemoryG0DumpAndADumpWithACorruptKeyImport(t *testing.T) {
	ctx := context.Background()
	dump := map[string]string{"hermitcrab_api_key": "sk-ant-never", "hcmem:/memories/naming.md": "I am Tidepool."}
	for i := 1; i <= 100; i++ {
		dump[fmt.Sprintf("hcmem:/memories/M-%d.md", i)] = fmt.Sprintf("session %d", i)
	}
	data, _ := json.Marshal(dump)
	// A new data directory, as `hermitcrab blocks import` meets it: the G0
	// memory goes into the default shell's blocks.
	k, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	res, err := k.Import(ctx, []ImportSource{{Name: "localStorage.json", Data: data}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 9 {
		t.Fatalf("written %v", res.Written)
	}
	for i := 1; i <= 100; i++ {
		v := i - 1
		r, err := k.BSP(ctx, "history", fmt.Sprintf("0%d%d.%d", v/81+1, v/9%9+1, v%9+1), -1)
		if err != nil || r.Point.Text != fmt.Sprintf("[/memories/M-%d.md] session %d", i, i) {
			t.Fatalf("memory %d: %+v %v", i, r.Point, err)
		}
	}
	if got := text(t, k, "constitution", "0.5.1"); got != "[/memories/naming.md] I am Tidepool." {
		t.Fatalf("the naming file: %q", got)
	}

	corrupt := `{"hc:purpose": "{\"place\":1,\"tree\":{\"0\":\"Why I am here, from the old browser.\"}}", "hc:stash": "{\"place\": 1, \"tr"}`
	k2 := openKernel(t, Options{})
	res, err = k2.Import(ctx, []ImportSource{{Name: "old.json", Data: []byte(corrupt)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Written, ",") != "purpose" || strings.Join(res.Unreadable, ",") != "old.json: hc:stash" {
		t.Fatalf("written %v, unreadable %v", res.Written, res.Unreadable)
	}
	if got := text(t, k2, "purpose", "0"); got != "Why I am here, from the old browser." {
		t.Fatalf("purpose: %q", got)
	}
	if got := text(t, k2, "stash", "0"); got == "" {
		t.Fatal("the instance's own stash was lost to a corrupt key")
	}
}
